import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDatabase, type Database } from '@svc/db/client';
import { webhookEndpoints } from '@svc/db/schema/webhooks';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../../test/support/db.ts';
import { freePort } from '../../../../../test/support/server.ts';
import { type SpawnedServer, spawnServer } from '../../../../../test/support/spawn.ts';
import { seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';

/**
 * docs/architecture.md section 7: logs never contain signing secrets. A real `svc serve` (worker included) at debug
 * level creates an endpoint, rotates its secret and delivers a test event to a receiver that
 * first fails with the secret in its answer; neither secret nor its ciphertext appears in the
 * process output, the delivery's attempts or any answer but the create and rotate ones.
 */
describe('webhook secrets never reach the logs', () => {
  let server: SpawnedServer;
  let database: Database;
  let receiver: http.Server;
  let receiverUrl: string;
  /** What the receiver echoes in its failing answer (the secrets, once known). */
  const echoed: string[] = [];
  let answered = 0;

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        answered++;
        // The first attempt fails, echoing the signature and the secrets back (a hostile or buggy receiver).
        if (answered === 1) {
          res.writeHead(500, { 'content-type': 'text/plain' }).end(`sig=${req.headers['webhook-signature']} ${echoed.join(' ')}`);
        } else {
          res.writeHead(200).end('ok');
        }
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const databaseUrl = await createTestDatabase();
    server = await spawnServer({
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'debug',
      WORKER_ENABLED: 'true',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      // Two attempts, the second 100 ms after the first.
      WEBHOOK_RETRY_SCHEDULE: '0,100ms',
      DEV_ENGINE_PORT: String(await freePort()),
    });
    database = createDatabase({ url: databaseUrl, max: 1, applicationName: 'svc-test-admin' });
  });

  afterAll(async () => {
    await server?.stop();
    await database?.close();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  it('create, rotate, a failed then successful delivery: no secret in the output, the attempts or the answers', async () => {
    const db = database.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const answers: string[] = [];
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${server.url}${path}`, {
        method,
        headers: {
          cookie: admin.cookie,
          ...(method !== 'GET' ? { 'content-type': 'application/json', origin: new URL(server.url).origin } : {}),
        },
        body: method !== 'GET' ? JSON.stringify(body ?? {}) : undefined,
      });
      const text = await res.text();
      answers.push(text);
      expect(res.status >= 200 && res.status < 300, `${method} ${path}: ${res.status} ${text}`).toBe(true);
      return JSON.parse(text) as Record<string, any>;
    };

    const created = await call('POST', '/v1/webhook-endpoints', {
      organization_slug: org.slug,
      url: receiverUrl,
      eventTypes: ['user.created'],
    });
    const id = created.endpoint.id as string;
    const rotated = await call('POST', `/v1/webhook-endpoints/${id}/rotate-secret`);
    const secrets = [created.secret as string, rotated.secret as string];
    echoed.push(...secrets);
    const { delivery } = await call('POST', `/v1/webhook-endpoints/${id}/test`);

    let detail: Record<string, any> = {};
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      detail = await call('GET', `/v1/webhook-deliveries/${delivery.id}`);
      if (detail.status === 'succeeded' || detail.status === 'failed') {
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(detail.status).toBe('succeeded');
    expect(detail.attempts.map((a: { statusCode: number }) => a.statusCode)).toEqual([500, 200]);
    // The failing receiver echoed both secrets: the stored excerpt has them masked.
    expect(detail.attempts[0].responseExcerpt).toContain('sig=');
    await call('GET', `/v1/webhook-deliveries?organization_slug=${org.slug}`);
    await call('GET', `/v1/webhook-endpoints?organization_slug=${org.slug}`);
    await call('GET', `/v1/audit-logs?organization_slug=${org.slug}`);

    const [row] = await db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id));
    const sealed = [row?.secretCiphertext, row?.previousSecretCiphertext].filter((v): v is string => typeof v === 'string');
    expect(sealed).toHaveLength(2);

    await server.stop();
    const output = server.output();
    expect(output.length, 'the whole output was kept (the tail is capped at 64 KiB)').toBeLessThan(60_000);
    expect(output).toContain('request');
    // The answers after create and rotate, and everything the process printed.
    for (const text of [...answers.slice(2), output]) {
      for (const secret of secrets) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(secret.slice('whsec_'.length));
        // Nor a piece of it (a mask that stopped at a + or / would leave the rest).
        for (const piece of secret
          .slice('whsec_'.length)
          .split(/[+/=]/)
          .filter((p) => p.length >= 8)) {
          expect(text).not.toContain(piece);
        }
      }
      for (const value of sealed) {
        expect(text).not.toContain(value);
      }
      expect(text).not.toMatch(/whsec_[A-Za-z0-9+/]{8}/);
    }
  });
});

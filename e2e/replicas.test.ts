import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { newId } from '@svc/contracts/ids';
import { createDatabase, type Database } from '@svc/db/client';
import type { OrganizationRow } from '@svc/db/queries/organizations';
import { webhookEndpoints } from '@svc/db/schema/webhooks';
import { createSecretBox } from '@svc/db/secret-box';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { revokeSession } from '../apps/api/src/modules/session-store/service.ts';
import { generateWebhookSecret, sealWebhookSecret } from '../packages/jobs/src/webhooks/secrets.ts';
import { createTestDatabase } from '../test/support/db.ts';
import { freePort } from '../test/support/server.ts';
import { REPO_ROOT, runCli, type SpawnedServer, spawnServer } from '../test/support/spawn.ts';
import { type SignedIn, seedApiKey, seedOrganization, seedSignedIn } from '../test/support/tenancy.ts';
import { type Receiver, startReceiver } from '../test/support/webhook-receiver.ts';
import { roomInWindow } from '../test/support/window.ts';
import { type SpawnedWorker, spawnWorker } from '../test/support/worker.ts';
import { describeWhenInstalled } from './support/browser.ts';

/**
 * Replicas behind a real load balancer, on one machine (docs/operations.md "Replicas"): Debian's
 * HAProxy with deploy/replicas/haproxy.cfg in front of three compiled `svc serve --no-worker`
 * processes, beside two `svc worker` processes, all on one fresh PostgreSQL database. Under load,
 * one API process is killed with SIGKILL and another sent SIGTERM; the requests that were not in
 * flight on the killed process all succeed. Rate limits hold across the processes as one limit;
 * four changes (a session revoked, an API key rotated, a signing key rotated, a role changed)
 * reach every process within a second, asked of each one directly; and no usage event or webhook
 * is lost or doubled. The counts and times are printed for the record.
 */

/** A change takes effect on every API process within one second (docs/architecture.md section 5). */
const PROPAGATION_BUDGET_MS = 1_000;
/** The public per-IP limit every replica is given: one limit, whichever replica a request meets. */
const PUBLIC_LIMIT = 120;
const ENCRYPTION_KEY = randomBytes(32).toString('base64');
const HAPROXY = '/usr/sbin/haproxy';
const HAPROXY_CONFIG = path.join(REPO_ROOT, 'deploy/replicas/haproxy.cfg');

type Reply = { status: number; headers: http.IncomingHttpHeaders; body: string };

/** One request on a fresh connection from `from` (a loopback address: a client IP of its own). */
function request(url: string, opts: { from?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { localAddress: opts.from, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

type LoadRecord = {
  kind: 'read' | 'usage';
  startedAt: number;
  endedAt: number;
  status: number;
  /** HAProxy's X-Svc-Replica: the server that answered (api1, api2, api3). */
  replica: string | null;
  idempotencyKey?: string;
};

describeWhenInstalled(
  'three API replicas and two workers behind HAProxy, on one database',
  existsSync(HAPROXY) ? undefined : `HAProxy not found at ${HAPROXY} (install Debian's package: apt-get install -y haproxy)`,
  () => {
    let databaseUrl: string;
    let database: Database;
    let apis: SpawnedServer[] = [];
    let workers: SpawnedWorker[] = [];
    let haproxy: ChildProcess | undefined;
    let haproxyOutput = '';
    let lb: string;
    let receiver: Receiver;
    let org: OrganizationRow;
    let admin: SignedIn;
    /** Propagation times, by change, for the closing summary. */
    const propagation: Record<string, number> = {};

    async function startHaproxy(port: number, servers: SpawnedServer[]): Promise<void> {
      lb = `http://127.0.0.1:${port}`;
      haproxy = spawn(HAPROXY, ['-db', '-f', HAPROXY_CONFIG], {
        env: {
          ...process.env,
          SVC_LB_BIND: `127.0.0.1:${port}`,
          ...Object.fromEntries(servers.map((s, i) => [`SVC_API_${i + 1}`, new URL(s.url).host])),
          // Quicker than the file's defaults: the test's whole run is a few seconds.
          SVC_LB_CHECK_INTER: '100ms',
          SVC_LB_CHECK_FALL: '1',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      haproxy.stdout?.on('data', (d) => {
        haproxyOutput += d;
      });
      haproxy.stderr?.on('data', (d) => {
        haproxyOutput += d;
      });
      // Ready once every replica has answered through it (each passed its /readyz checks).
      const seen = new Set<string>();
      const deadline = Date.now() + 30_000;
      while (seen.size < servers.length) {
        expect(Date.now() < deadline, `HAProxy did not reach every replica: ${haproxyOutput}`).toBe(true);
        const reply = await request(`${lb}/readyz`).catch(() => undefined);
        if (reply?.status === 200) {
          seen.add(String(reply.headers['x-svc-replica']));
        } else {
          await sleep(50);
        }
      }
    }

    beforeAll(async () => {
      databaseUrl = await createTestDatabase();
      database = createDatabase({ url: databaseUrl, max: 2, applicationName: 'svc-test-replicas' });
      receiver = await startReceiver();
      const lbPort = await freePort();
      const shared = { DATABASE_URL: databaseUrl, SVC_ENCRYPTION_KEY: ENCRYPTION_KEY, LOG_LEVEL: 'warn' };
      const apiEnv = {
        ...shared,
        // Browsers and the OpenID Provider's issuer: the load balancer's address, on every replica.
        PUBLIC_URL: `http://127.0.0.1:${lbPort}`,
        // HAProxy's X-Forwarded-For names the client: per-IP limits count clients, not the proxy.
        TRUST_PROXY: 'loopback',
        RATE_LIMIT_PUBLIC_PER_MINUTE: String(PUBLIC_LIMIT),
        // Ten-minute caches: only the cross-process invalidation (LISTEN/NOTIFY) can pass the budget.
        ACCESS_CACHE_TTL_MS: '600000',
        APPLICATION_CACHE_TTL_MS: '600000',
      };
      const workerEnv = { ...shared, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '0,100,200,500,1s,1s,1s,1s,1s,1s' };
      [apis, workers] = await Promise.all([
        Promise.all([1, 2, 3].map(() => spawnServer(apiEnv, { compiled: true, args: ['--no-worker'] }))),
        Promise.all([1, 2].map(() => spawnWorker(workerEnv, { compiled: true }))),
      ]);
      // HAProxy on the port PUBLIC_URL names.
      await startHaproxy(lbPort, apis);

      org = await seedOrganization(database.db);
      admin = await seedSignedIn(database.db, { organization: org, roleKey: 'org_admin' });
      const endpointId = newId('webhookEndpoint');
      const secret = generateWebhookSecret();
      await database.db.insert(webhookEndpoints).values({
        id: endpointId,
        tenantId: org.id,
        url: receiver.url('usage'),
        eventTypes: ['usage_event.created'],
        secretCiphertext: sealWebhookSecret(createSecretBox(Buffer.from(ENCRYPTION_KEY, 'base64')), endpointId, secret),
      });
      receiver.addEndpoint('usage', secret);
    }, 120_000);

    afterAll(async () => {
      // A replica or worker that exited before the test stopped it says why.
      for (const p of [...apis, ...workers]) {
        if (p.child.exitCode !== null || (p.child.signalCode !== null && p.child.signalCode !== 'SIGKILL')) {
          process.stdout.write(`exited early (${p.child.exitCode ?? p.child.signalCode}):\n${p.output()}\n`);
        }
      }
      haproxy?.kill('SIGTERM');
      await Promise.all([...apis.map((s) => s.stop()), ...workers.map((w) => w.stop())]);
      await receiver?.close();
      await database?.close();
    });

    /** Through the load balancer, as a client: the admin's session, a JSON write from PUBLIC_URL's origin. */
    async function adminWrite(method: string, pathname: string, body: unknown): Promise<Response> {
      return fetch(`${lb}${pathname}`, {
        method,
        headers: { cookie: admin.cookie, 'content-type': 'application/json', origin: lb },
        body: JSON.stringify(body),
      });
    }

    /**
     * Asks every live replica directly, every 10 ms, until `probe` holds on each; returns how long
     * after `since` the last one did. Fails past the budget (polled a little longer, to report it).
     */
    async function convergence(name: string, since: number, probe: (s: SpawnedServer) => Promise<boolean>): Promise<number> {
      const doneAt = new Map<SpawnedServer, number>();
      while (doneAt.size < apis.length && Date.now() < since + PROPAGATION_BUDGET_MS + 2_000) {
        await Promise.all(
          apis
            .filter((s) => !doneAt.has(s))
            .map(async (s) => {
              if (await probe(s)) {
                doneAt.set(s, Date.now());
              }
            }),
        );
        if (doneAt.size < apis.length) {
          await sleep(10);
        }
      }
      expect(doneAt.size, `${name}: replicas that saw the change`).toBe(apis.length);
      const ms = Math.max(...[...doneAt.values()].map((t) => t - since));
      propagation[name] = ms;
      expect(ms, name).toBeLessThan(PROPAGATION_BUDGET_MS);
      return ms;
    }

    it('each replica is ready and runs no job worker of its own (--no-worker): the two svc worker processes do the jobs', async () => {
      for (const s of apis) {
        const ready = await fetch(`${s.url}/readyz`);
        expect(ready.status).toBe(200);
        expect(((await ready.json()) as { checks: { worker: unknown } }).checks.worker).toBeNull();
      }
      expect(workers.every((w) => w.running())).toBe(true);
    });

    it('the public rate limit is one limit across the three replicas', async () => {
      await roomInWindow(15);
      // From one client address (127.0.0.7), through HAProxy, which spreads it over the replicas.
      const burst = PUBLIC_LIMIT + 60;
      const replies: Reply[] = [];
      for (let i = 0; i < burst; i += 10) {
        replies.push(...(await Promise.all(Array.from({ length: 10 }, () => request(`${lb}/v1/config`, { from: '127.0.0.7' })))));
      }
      expect(replies.every((r) => r.status === 200 || r.status === 429)).toBe(true);
      let passed = replies.filter((r) => r.status === 200).length;
      expect(passed).toBeLessThanOrEqual(PUBLIC_LIMIT);
      // Tokens a replica leased and has not spent yet still count: keep asking until every replica
      // has refused; the window then has granted exactly the limit, not three times it.
      const refusedBy = new Set(replies.filter((r) => r.status === 429).map((r) => String(r.headers['x-svc-replica'])));
      for (let i = 0; refusedBy.size < apis.length && i < 3 * PUBLIC_LIMIT; i++) {
        const reply = await request(`${lb}/v1/config`, { from: '127.0.0.7' });
        if (reply.status === 200) {
          passed++;
        } else {
          expect(reply.status).toBe(429);
          refusedBy.add(String(reply.headers['x-svc-replica']));
        }
      }
      expect(refusedBy.size).toBe(apis.length);
      expect(passed).toBe(PUBLIC_LIMIT);
      const servedBy = new Set(replies.map((r) => String(r.headers['x-svc-replica'])));
      expect(servedBy.size).toBe(apis.length);
    });

    it('a revoked session, a rotated API key, a rotated signing key and a changed role reach every replica within a second', async () => {
      // A session revoked (as an admin revokes it): refused on every replica.
      const person = await seedSignedIn(database.db, { organization: org, roleKey: 'org_admin' });
      const me = (s: SpawnedServer, cookie: string) => fetch(`${s.url}/v1/me`, { headers: { cookie } }).then((r) => r.status);
      for (const s of apis) {
        expect(await me(s, person.cookie)).toBe(200);
      }
      expect(await revokeSession(database.db, person.sessionId)).toBe(true);
      await convergence('session revoked', Date.now(), async (s) => (await me(s, person.cookie)) === 401);

      // An API key rotated through the load balancer: the old secret refused, the new one taken.
      const key = await seedApiKey(database.db, { tenantId: org.id, scopes: ['tenant.read'] });
      const read = (s: SpawnedServer, secret: string) =>
        fetch(`${s.url}/v1/tenants/${org.id}`, { headers: { authorization: `Bearer ${secret}` } }).then((r) => r.status);
      for (const s of apis) {
        expect(await read(s, key.secretKey)).toBe(200);
      }
      const rotated = await adminWrite('POST', `/v1/api-keys/${key.id}/rotate`, {});
      expect(rotated.status).toBe(200);
      const rotatedAt = Date.now();
      const { secretKey: next } = (await rotated.json()) as { secretKey: string };
      await convergence('API key rotated', rotatedAt, async (s) => (await read(s, key.secretKey)) === 401 && (await read(s, next)) === 200);

      // The OpenID Provider's signing key rotated by the compiled command line: every replica
      // publishes the new key.
      const kids = async (s: SpawnedServer) =>
        ((await (await fetch(`${s.url}/oidc/jwks`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
      const before = await kids(apis[0] as SpawnedServer);
      const cli = await runCli(
        ['keys', 'rotate', '--json'],
        { DATABASE_URL: databaseUrl, SVC_ENCRYPTION_KEY: ENCRYPTION_KEY },
        { compiled: true },
      );
      expect(cli.code, cli.stderr).toBe(0);
      const keysRotatedAt = Date.now();
      const { kid } = JSON.parse(cli.stdout) as { kid: string };
      expect(before).not.toContain(kid);
      await convergence('signing key rotated', keysRotatedAt, async (s) => (await kids(s))[0] === kid);

      // A role changed through the load balancer: the person's session loses webhooks.read on
      // every replica.
      const member = await seedSignedIn(database.db, { organization: org, roleKey: 'org_admin' });
      const hooks = (s: SpawnedServer) =>
        fetch(`${s.url}/v1/webhook-endpoints?organization_slug=${org.slug}`, { headers: { cookie: member.cookie } }).then((r) => r.status);
      for (const s of apis) {
        expect(await hooks(s)).toBe(200);
      }
      const demoted = await adminWrite('PATCH', `/v1/users/${member.user.id}`, { organization_slug: org.slug, roleKey: 'org_member' });
      expect(demoted.status, await demoted.clone().text()).toBe(200);
      await convergence('role changed', Date.now(), async (s) => (await hooks(s)) === 403);
    });

    it('under load, kill -9 of one replica and SIGTERM of another fail no request that was not in flight on the killed one; no usage event or webhook is lost or doubled', async () => {
      const key = await seedApiKey(database.db, { tenantId: org.id, scopes: ['tenant.read', 'usage.write'] });
      const records: LoadRecord[] = [];
      let running = true;
      let n = 0;
      const headers = { authorization: key.authorization, 'content-type': 'application/json' };
      // Six clients with keep-alive connections through HAProxy, alternating a read and one usage event.
      const client = async () => {
        while (running) {
          const idempotencyKey = `load-${n++}`;
          const kind: LoadRecord['kind'] = n % 2 === 0 ? 'read' : 'usage';
          const startedAt = Date.now();
          let status = 0;
          let replica: string | null = null;
          try {
            const res =
              kind === 'read'
                ? await fetch(`${lb}/v1/tenants/${org.id}`, { headers })
                : await fetch(`${lb}/v1/usage/events`, {
                    method: 'POST',
                    headers,
                    body: JSON.stringify({ idempotencyKey, eventType: 'api_call', quantity: 1 }),
                  });
            await res.arrayBuffer();
            status = res.status;
            replica = res.headers.get('x-svc-replica');
          } catch {
            status = 0;
          }
          records.push({
            kind,
            startedAt,
            endedAt: Date.now(),
            status,
            replica,
            idempotencyKey: kind === 'usage' ? idempotencyKey : undefined,
          });
        }
      };
      const clients = Array.from({ length: 6 }, () => client());
      const [killed, drained] = [apis[0] as SpawnedServer, apis[1] as SpawnedServer];
      await sleep(1_500);
      const killedAt = Date.now();
      killed.child.kill('SIGKILL');
      await sleep(1_000);
      // A worker leaves too, gracefully: the jobs it holds finish, the others stay for the other.
      const workerStopped = (workers[0] as SpawnedWorker).stop();
      await sleep(500);
      const drainedAt = Date.now();
      const drainedStop = drained.stop();
      await sleep(2_000);
      running = false;
      await Promise.all(clients);
      await Promise.all([drainedStop, workerStopped]);
      apis = apis.slice(2);
      workers = workers.slice(1);

      const ok = (r: LoadRecord) => r.status === 200 || r.status === 201;
      const failed = records.filter((r) => !ok(r));
      // In flight when the process died: sent before, answered after (on any replica: an upper
      // bound on what was in flight on the killed one).
      const inFlightAtKill = failed.filter((r) => r.startedAt <= killedAt && r.endedAt >= killedAt);
      const otherFailures = failed.filter((r) => !inFlightAtKill.includes(r));

      // Usage events: every one answered 200/201 is stored once; nothing stored twice or unsent.
      const accepted = new Set(records.filter((r) => r.kind === 'usage' && ok(r)).map((r) => r.idempotencyKey));
      const sentKeys = new Set(records.filter((r) => r.kind === 'usage').map((r) => r.idempotencyKey));
      const stored = await database.sql<{ key: string; n: number }[]>`
      select idempotency_key as key, count(*)::int as n from usage_events where tenant_id = ${org.id} group by idempotency_key`;
      const storedKeys = new Set(stored.map((r) => r.key));
      const lostEvents = [...accepted].filter((k) => !storedKeys.has(k as string));
      const doubledEvents = stored.filter((r) => r.n > 1);
      const strayEvents = [...storedKeys].filter((k) => !sentKeys.has(k));

      // Webhooks: every usage_event.created event delivered, each once (no worker died mid-send).
      const events = await database.sql<{ id: string }[]>`
      select id from webhook_events where tenant_id = ${org.id} and type = 'usage_event.created'`;
      const eventIds = new Set(events.map((e) => e.id));
      const deadline = Date.now() + 30_000;
      while ([...eventIds].some((id) => !receiver.processed('usage').includes(id)) && Date.now() < deadline) {
        await sleep(100);
      }
      const delivered = new Set(receiver.processed('usage'));
      const lostWebhooks = [...eventIds].filter((id) => !delivered.has(id));
      const arrivals = new Map<string, number>();
      for (const r of receiver.requests.filter((q) => q.endpoint === 'usage')) {
        arrivals.set(r.webhookId, (arrivals.get(r.webhookId) ?? 0) + 1);
      }
      const doubledWebhooks = [...arrivals].filter(([, count]) => count > 1);

      // The load met both leaving replicas (api1 killed, api2 drained) before they left, and
      // neither answered once HAProxy had seen them go.
      const answeredBy = (replica: string, from: number, to: number) =>
        records.filter((r) => r.replica === replica && r.startedAt >= from && r.startedAt < to).length;
      const summary = {
        requestsSent: records.length,
        answeredByKilledBeforeKill: answeredBy('api1', 0, killedAt),
        answeredByKilledAfterKill: answeredBy('api1', killedAt, Number.POSITIVE_INFINITY),
        answeredByDrainedBeforeSigterm: answeredBy('api2', 0, drainedAt),
        answeredByDrainedAfterSigterm: answeredBy('api2', drainedAt, Number.POSITIVE_INFINITY),
        inFlightAtKill: records.filter((r) => r.startedAt <= killedAt && r.endedAt >= killedAt).length,
        failed: failed.length,
        failedInFlightAtKill: inFlightAtKill.length,
        failedNotInFlightOnKilled: otherFailures.length,
        failedStatuses: [...new Set(failed.map((r) => r.status))],
        sigtermAfterKillMs: drainedAt - killedAt,
        usageEventsAccepted: accepted.size,
        usageEventsStored: stored.length,
        usageEventsLost: lostEvents.length,
        usageEventsDoubled: doubledEvents.length,
        webhookEvents: eventIds.size,
        webhooksDelivered: delivered.size,
        webhooksLost: lostWebhooks.length,
        webhooksDeliveredTwice: doubledWebhooks.length,
        propagationMs: propagation,
      };
      process.stdout.write(`replicas: ${JSON.stringify(summary, null, 2)}\n`);

      expect(records.length).toBeGreaterThan(100);
      expect(summary.answeredByKilledBeforeKill).toBeGreaterThan(0);
      expect(summary.answeredByKilledAfterKill).toBe(0);
      expect(summary.answeredByDrainedBeforeSigterm).toBeGreaterThan(0);
      expect(otherFailures, JSON.stringify(otherFailures.slice(0, 5))).toEqual([]);
      expect(lostEvents).toEqual([]);
      expect(doubledEvents).toEqual([]);
      expect(strayEvents).toEqual([]);
      expect(eventIds.size).toBe(stored.length);
      expect(lostWebhooks).toEqual([]);
      expect(doubledWebhooks).toEqual([]);
      expect(Object.keys(propagation)).toHaveLength(4);
    });
  },
);

import { ZAgentContextResponse } from '@svc/contracts/agent-context';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

describe('GET /v1/setup/agent-context over HTTP', () => {
  it('answers the context for a publishable key, with the application allowlists and no secret', async () => {
    const app = await seedApplication(server.services.db, {
      redirectUrls: ['https://shop.example.com/api/auth/callback/svc'],
      allowedOrigins: ['https://shop.example.com'],
    });
    const res = await fetch(`${server.url}/v1/setup/agent-context?publishable_key=${app.publishableKey}&framework=nextjs`);
    const text = await res.text();
    expect(res.status).toBe(200);
    const body = ZAgentContextResponse.parse(JSON.parse(text));
    expect(body.project.application.publishableKey).toBe(app.publishableKey);
    expect(body.redirectUrls).toContain('https://shop.example.com/api/auth/callback/svc');
    expect(body.javascriptOrigins).toContain('https://shop.example.com');
    expect(body.framework.installCommand).toContain('next-auth');
    expect(body.aiAgentPrompt).toContain(app.publishableKey);
    expect(text).not.toContain(app.secretKey);
    expect(text).not.toContain(app.application.secretKeyHash);
    expect(text).not.toMatch(/sk_live_[0-9A-Za-z]{4,}/);
  });

  it('works keyless and through the header', async () => {
    const keyless = await fetch(`${server.url}/v1/setup/agent-context?keyless=1&framework=django`);
    expect(keyless.status).toBe(200);
    expect(((await keyless.json()) as { project: { keyless: boolean } }).project.keyless).toBe(true);
    const app = await seedApplication(server.services.db);
    const byHeader = await fetch(`${server.url}/v1/setup/agent-context?framework=rest`, {
      headers: { 'x-svc-publishable-key': app.publishableKey },
    });
    expect(byHeader.status).toBe(200);
  });

  it.each([
    ['unknown framework', 'keyless=1&framework=cobol', 400, 'unsupported_framework'],
    ['repeated framework', 'keyless=1&framework=rest&framework=react', 400, 'validation_failed'],
    ['no key', 'framework=rest', 400, 'invalid_publishable_key'],
    ['unknown key', `framework=rest&publishable_key=pk_live_${'Y'.repeat(24)}`, 404, 'application_not_found'],
  ])('%s -> %i %s', async (_name, query, status, code) => {
    const res = await fetch(`${server.url}/v1/setup/agent-context?${query}`);
    expect(res.status).toBe(status);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(code);
  });
});

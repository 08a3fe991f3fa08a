import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../test/support/factories.ts';
import { startTestServer } from '../../../test/support/server.ts';
import { createSvcClient, svcErrorCode } from './index.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

describe('createSvcClient', () => {
  it('checks its secret key against a running server over /trpc', async () => {
    const app = await seedApplication(server.services.db);
    const svc = createSvcClient({ baseUrl: server.url, secretKey: app.secretKey });
    const answer = await svc.backend.application.query();
    expect(answer.ok).toBe(true);
    expect(answer.application.id).toBe(app.application.id);
    expect(answer.organization.slug).toBe(app.organization.slug);
    expect(answer.application.secretKeyPrefix).toBe(app.secretKey.slice(0, 12));
  });

  it('surfaces svc error codes: unknown key and disabled application', async () => {
    const unknown = createSvcClient({ baseUrl: server.url, secretKey: `sk_live_${'Q'.repeat(40)}` });
    const error = await unknown.backend.application.query().catch((e: unknown) => e);
    expect(svcErrorCode(error)).toBe('invalid_secret_key');

    const disabled = await seedApplication(server.services.db, { status: 'disabled' });
    const client = createSvcClient({ baseUrl: `${server.url}/`, secretKey: disabled.secretKey });
    const refused = await client.backend.application.query().catch((e: unknown) => e);
    expect(svcErrorCode(refused)).toBe('application_disabled');
  });

  it('reads public service configuration through the same client', async () => {
    const app = await seedApplication(server.services.db);
    const svc = createSvcClient({ baseUrl: server.url, secretKey: app.secretKey });
    const config = await svc.service.config.query();
    expect(config.apiVersion).toBe('v1');
  });
});

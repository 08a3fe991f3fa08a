import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../test/support/factories.ts';
import { startTestServer } from '../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../test/support/tenancy.ts';
import { createSvcClient, isSvcError, type SvcOutputs, svcError, svcErrorCode } from './index.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

/** The typed client with a real tenant API key against a running server (over /trpc). */
describe('createSvcClient with a tenant API key', () => {
  it('calls the control plane within its scopes, in its own organization (organization_slug defaults to it)', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db, { name: 'Client Co' });
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member', name: 'Listed Member' });
    const key = await seedApiKey(db, {
      tenantId: org.id,
      scopes: ['tenant.read', 'members.read', 'users.read', 'api_keys.read', 'audit.read'],
    });
    const svc = createSvcClient({ baseUrl: server.url, secretKey: key.secretKey });

    const tenant = await svc.tenants.get.query({ id: org.id });
    expect(tenant).toMatchObject({ id: org.id, name: 'Client Co', kind: 'tenant' });

    const members = await svc.tenants.member.list.query({ id: org.id });
    expect(members.data.map((m) => m.userId)).toContain(member.user.id);

    const users = await svc.users.list.query({});
    expect(users.data.length).toBeGreaterThan(0);

    const keys = await svc.apiKeys.list.query({ id: org.id });
    const self: SvcOutputs['apiKeys']['list']['data'][number] | undefined = keys.data.find((k) => k.id === key.id);
    expect(self).toMatchObject({ status: 'active', secretPrefix: key.secretKey.slice(0, 12) });
    expect(JSON.stringify(keys)).not.toContain(key.secretKey);

    const log = await svc.auditLogs.list.query({});
    expect(Array.isArray(log.data)).toBe(true);
  });

  it("an out-of-scope call rejects with svcErrorCode 'forbidden' (and the request id); another tenant's id with 'not_found'", async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const other = await seedOrganization(db, { name: 'Not Yours Ltd' });
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'] });
    const svc = createSvcClient({ baseUrl: server.url, secretKey: key.secretKey });

    const listing = await svc.users.list.query({}).catch((e: unknown) => e);
    expect(svcErrorCode(listing)).toBe('forbidden');
    expect(svcError(listing)).toMatchObject({ code: 'forbidden', httpStatus: 403, requestId: expect.any(String) });
    expect(isSvcError(listing, 'forbidden')).toBe(true);
    expect(isSvcError(listing, 'not_found')).toBe(false);

    const update = await svc.tenants.update.mutate({ id: org.id, name: 'Renamed by a reader' }).catch((e: unknown) => e);
    expect(svcErrorCode(update)).toBe('forbidden');

    const foreign = await svc.tenants.get.query({ id: other.id }).catch((e: unknown) => e);
    expect(svcErrorCode(foreign)).toBe('not_found');
    expect((foreign as Error).message).not.toContain('Not Yours Ltd');
  });

  it('a key cannot mint keys, may revoke itself, and is refused with invalid_secret_key right after', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['api_keys.manage', 'api_keys.read', 'tenant.read'] });
    const svc = createSvcClient({ baseUrl: server.url, secretKey: key.secretKey });

    const minted = await svc.apiKeys.create.mutate({ id: org.id, name: 'child', scopes: ['tenant.read'] }).catch((e: unknown) => e);
    expect(svcErrorCode(minted)).toBe('forbidden');

    const revoked = await svc.apiKeys.revoke.mutate({ id: key.id });
    expect(revoked).toMatchObject({ id: key.id, status: 'revoked' });
    const after = await svc.tenants.get.query({ id: org.id }).catch((e: unknown) => e);
    expect(svcError(after)).toMatchObject({ code: 'invalid_secret_key', httpStatus: 401 });
  });

  it('validation errors carry the refused inputs; failures that are not svc answers give undefined', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'] });
    const svc = createSvcClient({ baseUrl: server.url, secretKey: key.secretKey });
    const bad = await svc.tenants.get.query({ id: 'usr_nope' }).catch((e: unknown) => e);
    const parsed = svcError(bad);
    expect(parsed?.code).toBe('validation_failed');
    expect(parsed?.httpStatus).toBe(400);
    expect(parsed?.issues?.[0]?.path).toEqual(['id']);

    // Nothing listens on port 9 (discard): a network failure is not an svc error.
    const offline = createSvcClient({ baseUrl: 'http://127.0.0.1:9', secretKey: key.secretKey });
    const down = await offline.tenants.get.query({ id: org.id }).catch((e: unknown) => e);
    expect(down).toBeInstanceOf(Error);
    expect(svcError(down)).toBeUndefined();
    expect(isSvcError(down)).toBe(false);
    expect(svcError(new Error('plain'))).toBeUndefined();
  });

  it('an application secret key is for backend routes only: the control plane answers forbidden', async () => {
    const app = await seedApplication(server.services.db);
    const svc = createSvcClient({ baseUrl: server.url, secretKey: app.secretKey });
    expect((await svc.backend.application.query()).ok).toBe(true);
    const refused = await svc.tenants.get.query({ id: app.organization.id }).catch((e: unknown) => e);
    expect(svcErrorCode(refused)).toBe('forbidden');
  });
});

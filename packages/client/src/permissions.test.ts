import { newId } from '@svc/contracts/ids';
import { apiPermissions, apiResources } from '@svc/db/schema/authorization';
import { roles } from '@svc/db/schema/roles';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../test/support/factories.ts';
import { startTestServer } from '../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../test/support/tenancy.ts';
import { createSvcClient, svcErrorCode } from './index.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

describe('createSvcClient: can and hasFeature', () => {
  it("answers a person's product permission in the application's organization, by id, slug or neither", async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const resourceId = newId('apiResource');
    const permission = `reports${Date.now()}.read`;
    await db.insert(apiResources).values({ id: resourceId, identifier: `https://reports-${Date.now()}.example.com`, name: 'Reports' });
    await db.insert(apiPermissions).values({ id: newId('apiPermission'), resourceId, name: permission });
    await db
      .insert(roles)
      .values({ id: newId('role'), tenantId: org.id, key: 'analyst', name: 'Analyst', productPermissions: [permission] });
    const analyst = await seedSignedIn(db, { organization: org, roleKey: 'analyst' });
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    const app = await seedApplication(db, { org: org.slug });
    const svc = createSvcClient({ baseUrl: server.url, secretKey: app.secretKey });

    expect(await svc.can({ userId: analyst.user.id, permission })).toBe(true);
    expect(await svc.can({ organizationId: org.id, userId: analyst.user.id, permission })).toBe(true);
    expect(await svc.can({ organizationSlug: org.slug, userId: member.user.id, permission })).toBe(false);
    const answer = await svc.permissions.check.query({ userId: analyst.user.id, permission });
    expect(answer).toEqual({ allowed: true, organizationId: org.id, userId: analyst.user.id, permission, role: 'analyst' });

    expect(await svc.hasFeature({ feature: 'sso' })).toBe(false);
    expect((await svc.permissions.check.query({ feature: 'sso' })).plan).toBe('free');

    // A question svc refuses throws: never a silent false, never a true.
    const other = await seedOrganization(db);
    const refused = await svc.can({ organizationId: other.id, userId: member.user.id, permission }).catch((e: unknown) => e);
    expect(svcErrorCode(refused)).toBe('not_found');
    const unknown = await svc.can({ userId: member.user.id, permission: 'no.such-thing' }).catch((e: unknown) => e);
    expect(svcErrorCode(unknown)).toBe('unknown_permission');

    // A tenant API key asks within its own organization (members.read).
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['members.read'] });
    const withKey = createSvcClient({ baseUrl: server.url, secretKey: key.secretKey });
    expect(await withKey.can({ userId: analyst.user.id, permission })).toBe(true);
  });
});

import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { MatrixFixture, MatrixRoute } from '../../../../../test/support/auth-matrix.ts';

/** A grant a person of the fixture's organization gave a third-party client (as oidc-provider stores one). */
export async function seedThirdPartyGrant(
  db: MatrixFixture['server']['services']['db'],
  opts: { tenantId: string; slug: string; userId: string; clientId?: string },
): Promise<string> {
  const id = randomBytes(24).toString('base64url');
  const payload = {
    kind: 'Grant',
    jti: id,
    accountId: opts.userId,
    clientId: opts.clientId ?? 'https://agent.example/client.json',
    openid: { scope: 'openid offline_access' },
    resources: { 'https://mcp.example/mcp': 'notes.read' },
    organization: { id: opts.tenantId, slug: opts.slug },
    iat: Math.floor(Date.now() / 1000),
    exp: Math.floor(Date.now() / 1000) + 3600,
  };
  await db.execute(sql`
    insert into oidc_payloads (model, id, payload, expires_at)
    values ('Grant', ${id}, ${JSON.stringify(payload)}::jsonb, now() + interval '1 hour')`);
  return id;
}

export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/third-party-access',
    permission: 'connected_apps.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/third-party-access?organization_slug=${org.slug}` }),
  },
  {
    method: 'PATCH',
    template: '/v1/third-party-access',
    permission: 'connected_apps.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org }) => ({ path: '/v1/third-party-access', body: { organization_slug: org.slug, mode: 'any' } }),
  },
  {
    method: 'GET',
    template: '/v1/connected-apps',
    permission: 'connected_apps.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/connected-apps?organization_slug=${org.slug}` }),
  },
  {
    method: 'DELETE',
    template: '/v1/connected-apps/{id}',
    permission: 'connected_apps.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org, admin, server }) => ({
      path: `/v1/connected-apps/${await seedThirdPartyGrant(server.services.db, { tenantId: org.id, slug: org.slug, userId: admin.user.id })}?organization_slug=${org.slug}`,
    }),
  },
];

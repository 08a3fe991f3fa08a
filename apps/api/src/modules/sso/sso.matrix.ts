import type { MatrixFixture, MatrixRoute } from '../../../../../test/support/auth-matrix.ts';
import { makeKeyPair } from './saml-idp.fixtures.ts';
import { seedSsoConnection } from './sso.fixtures.ts';

let cert: string | undefined;

/** A fresh connection of the fixture's organization for each caller (delete consumes it). */
async function connectionOf({ server, org }: MatrixFixture): Promise<string> {
  return (await seedSsoConnection(server.services.db, { tenantId: org.id })).id;
}

export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/sso-connections',
    permission: 'sso.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/sso-connections?organization_slug=${org.slug}` }),
  },
  {
    method: 'POST',
    template: '/v1/sso-connections',
    permission: 'sso.manage',
    mutation: true,
    apiKey: true,
    okStatus: 201,
    prepare: async ({ org }) => {
      cert ??= makeKeyPair().cert;
      return {
        path: '/v1/sso-connections',
        body: {
          organization_slug: org.slug,
          protocol: 'saml',
          name: 'Matrix IdP',
          saml: { entityId: 'https://idp.example.org/saml', ssoUrl: 'https://idp.example.org/sso', certificates: [cert] },
        },
      };
    },
  },
  {
    method: 'GET',
    template: '/v1/sso-connections/{id}',
    permission: 'sso.read',
    mutation: false,
    apiKey: true,
    prepare: async (f) => ({ path: `/v1/sso-connections/${await connectionOf(f)}` }),
  },
  {
    method: 'PATCH',
    template: '/v1/sso-connections/{id}',
    permission: 'sso.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async (f) => ({ path: `/v1/sso-connections/${await connectionOf(f)}`, body: { name: 'Renamed' } }),
  },
  {
    method: 'DELETE',
    template: '/v1/sso-connections/{id}',
    permission: 'sso.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async (f) => ({ path: `/v1/sso-connections/${await connectionOf(f)}` }),
  },
  {
    method: 'POST',
    template: '/v1/sso-connections/{id}/test',
    permission: 'sso.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async (f) => ({ path: `/v1/sso-connections/${await connectionOf(f)}/test`, body: {} }),
  },
];

import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../apps/api/src/http/openapi.ts';
import type { MatrixRoute } from './support/auth-matrix.ts';

/**
 * Every signed-in operation of the OpenAPI document must be in some domain's authorization
 * matrix (`apps/api/src/modules/<domain>/<domain>.matrix.ts`), or be listed here with the reason
 * the matrix does not apply. A new route without a matrix entry fails this test.
 */
const EXEMPT: Record<string, string> = {
  'GET /v1/me': 'not organization-scoped: any live session may read itself (auth-flow tests)',
  'POST /v1/me/workspace':
    "moves the caller's own session among the caller's own organizations, a platform admin's to any: anonymous 401, API key 403, CSRF 403, anyone else 404 (me tests)",
  'POST /v1/me/memberships/{organizationId}/accept':
    "answers the caller's own pending membership, not a permission: anonymous 401, API key 403, CSRF 403, anyone else 404 (users-consent tests)",
  'POST /v1/me/memberships/{organizationId}/decline':
    "answers the caller's own pending membership, not a permission: anonymous 401, API key 403, CSRF 403, anyone else 404 (users-consent tests)",
  'GET /v1/tenants': "lists the caller's own organizations: nothing to be outside of (tenants tests)",
  'POST /v1/tenants': 'creates an organization: the caller becomes its admin (tenants tests)',
  'GET /v1/permissions': 'the same catalog for any signed-in caller or API key: no organization involved (tenants tests)',
  'POST /v1/invitations/accept': 'authorized by the invitation token, not a membership (invitations tests)',
  'GET /v1/platform/jobs': 'platform only: not organization-scoped (job-queue tests)',
  'GET /v1/platform/registered-clients': 'platform only: not organization-scoped (oidc-provider registration tests)',
  'GET /v1/webhook-event-types': 'the same event catalog for any signed-in caller or API key: no organization involved (webhooks tests)',
  'GET /v1/subscription-plans': 'the same plan list for any signed-in caller or API key: no organization involved (subscriptions tests)',
  'POST /v1/subscription-plans': 'platform admins only, no organization involved: every caller kind in subscriptions tests',
  'PATCH /v1/subscription-plans/{id}': 'platform admins only, no organization involved: every caller kind in subscriptions tests',
  'PATCH /v1/subscription': 'platform admins only (an org admin gets 403): every caller kind in subscriptions tests',
  'POST /v1/api-resources': 'platform admins only, no organization involved: every caller kind in authorization tests',
  'PATCH /v1/api-resources/{id}': 'platform admins only, no organization involved: every caller kind in authorization tests',
  'DELETE /v1/api-resources/{id}': 'platform admins only, no organization involved: every caller kind in authorization tests',
  'POST /v1/api-resources/{id}/permissions': 'platform admins only, no organization involved: every caller kind in authorization tests',
  'PATCH /v1/api-resources/{id}/permissions/{name}':
    'platform admins only, no organization involved: every caller kind in authorization tests',
  'DELETE /v1/api-resources/{id}/permissions/{name}':
    'platform admins only, no organization involved: every caller kind in authorization tests',
  'POST /v1/product-roles': 'platform admins only, no organization involved: every caller kind in authorization tests',
  'PATCH /v1/product-roles/{id}': 'platform admins only, no organization involved: every caller kind in authorization tests',
  'DELETE /v1/product-roles/{id}': 'platform admins only, no organization involved: every caller kind in authorization tests',
};

const MODULES = path.resolve(import.meta.dirname, '../apps/api/src/modules');

async function matrixRoutes(): Promise<MatrixRoute[]> {
  const routes: MatrixRoute[] = [];
  for (const domain of readdirSync(MODULES)) {
    for (const file of readdirSync(path.join(MODULES, domain)).filter((f) => f.endsWith('.matrix.ts'))) {
      const module = (await import(path.join(MODULES, domain, file))) as { MATRIX?: MatrixRoute[] };
      routes.push(...(module.MATRIX ?? []));
    }
  }
  return routes;
}

describe('authorization matrix coverage', () => {
  it('covers every signed-in operation of the OpenAPI document', async () => {
    const doc = buildOpenApiDocument('http://svc.test') as {
      paths: Record<string, Record<string, { security?: Record<string, string[]>[] }>>;
    };
    const covered = new Set((await matrixRoutes()).map((r) => `${r.method} ${r.template}`));
    const missing: string[] = [];
    for (const [p, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const signedIn = operation.security?.some((s) => 'sessionCookie' in s) ?? false;
        const name = `${method.toUpperCase()} /v1${p}`;
        if (!signedIn || p.startsWith('/platform/engine/') || EXEMPT[name] || covered.has(name)) {
          continue;
        }
        missing.push(name);
      }
    }
    expect(missing, 'operations without an authorization-matrix entry').toEqual([]);
  });
});

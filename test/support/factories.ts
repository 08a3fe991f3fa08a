import { newId } from '@svc/contracts/ids';
import type { Db } from '@svc/db/client';
import { apiPermissions, apiResources, productRoles } from '@svc/db/schema/authorization';
import { type CreatedApplication, createApplication } from '../../apps/api/src/modules/applications/service.ts';

let counter = 0;

/** An application (and its organization) with fresh keys; the raw secret is returned once. */
export async function seedApplication(
  db: Db,
  opts: {
    org?: string;
    name?: string;
    logoUrl?: string | null;
    status?: 'active' | 'disabled';
    redirectUrls?: string[];
    allowedOrigins?: string[];
    postLogoutRedirectUrls?: string[];
    backchannelLogoutUrl?: string | null;
    clientType?: 'confidential' | 'public' | 'machine';
    signInAudience?: 'anyone' | 'members';
    /** Machine clients: its product permissions (they must exist: seedApiResource). */
    permissions?: string[];
    tokenEndpointAuthMethod?: 'client_secret_basic' | 'private_key_jwt';
    jwks?: Record<string, unknown> | null;
  } = {},
): Promise<CreatedApplication> {
  counter++;
  return createApplication(db, {
    organizationSlug: opts.org ?? `org-${counter}-${Math.random().toString(36).slice(2, 8)}`,
    name: opts.name ?? `App ${counter}`,
    logoUrl: opts.logoUrl,
    status: opts.status,
    redirectUrls: opts.redirectUrls,
    allowedOrigins: opts.allowedOrigins,
    postLogoutRedirectUrls: opts.postLogoutRedirectUrls,
    backchannelLogoutUrl: opts.backchannelLogoutUrl,
    clientType: opts.clientType,
    signInAudience: opts.signInAudience,
    permissions: opts.permissions,
    tokenEndpointAuthMethod: opts.tokenEndpointAuthMethod,
    jwks: opts.jwks,
  });
}

/**
 * An API resource of the product with `permissions` (names unique across the product, so pass
 * fresh ones), written straight to its tables.
 */
export async function seedApiResource(
  db: Db,
  opts: { identifier?: string; name?: string; permissions: string[] },
): Promise<{ id: string; identifier: string }> {
  counter++;
  const id = newId('apiResource');
  const identifier = opts.identifier ?? `https://api-${counter}-${Math.random().toString(36).slice(2, 8)}.example.com`;
  await db.insert(apiResources).values({ id, identifier, name: opts.name ?? `API ${counter}` });
  if (opts.permissions.length > 0) {
    await db
      .insert(apiPermissions)
      .values(opts.permissions.map((name) => ({ id: newId('apiPermission'), resourceId: id, name, description: `may ${name}` })));
  }
  return { id, identifier };
}

/** Sets which product permissions the built-in org_admin (or org_member) role carries in every organization. */
export async function setBuiltinProductPermissions(db: Db, key: 'org_admin' | 'org_member', permissions: string[]): Promise<void> {
  // The built-in rows exist from the migration on; an upsert on their fixed id changes only the list.
  const sorted = [...permissions].sort();
  await db
    .insert(productRoles)
    .values({ id: `prl_${key}`, key, name: key, builtin: true, permissions: sorted })
    .onConflictDoUpdate({ target: productRoles.id, set: { permissions: sorted } });
}

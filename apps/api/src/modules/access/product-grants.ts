import { AppError } from '@svc/contracts/errors';
import type { DbOrTx } from '@svc/db/client';
import { type Access, isPlatformAdmin } from './authorize.ts';
import { grantsOfRole } from './role-grants.ts';

/**
 * The product permissions a caller holds in the organization it was authorized for, as a bound on
 * what it may hand out in a custom role (docs/authorization.md):
 * - a platform admin holds every product permission (`all`);
 * - an org admin holds the built-in org_admin row's permissions, which the platform decides; so
 *   does a tenant API key while its creator is an org admin there (as for svc's own catalog, a
 *   key never does more than its creator);
 * - another member holds what their role grants there in the product's catalog (role-grants.ts);
 * - any other API key holds none: its scopes are svc's control-plane catalog, which says nothing
 *   about the product's.
 * The one rule for custom roles and machine clients alike.
 */
export type HeldProductPermissions = 'all' | ReadonlySet<string>;

export async function heldProductPermissions(db: DbOrTx, access: Access): Promise<HeldProductPermissions> {
  const { principal, organization } = access;
  if (isPlatformAdmin(principal)) {
    return 'all';
  }
  if (access.isOrgAdmin) {
    return new Set((await grantsOfRole(db, organization.id, 'org_admin'))?.product ?? []);
  }
  if (principal.kind !== 'user') {
    return new Set();
  }
  const membership = principal.memberships.find((m) => m.organization.id === organization.id);
  if (!membership) {
    return new Set();
  }
  return new Set((await grantsOfRole(db, organization.id, membership.roleKey))?.product ?? []);
}

/**
 * 403 unless every one of `permissions` is held: the product-catalog twin of `assertGrantable`.
 * `refusal` says what was refused; the permissions beyond the caller follow it.
 */
export function assertProductGrantable(
  held: HeldProductPermissions,
  permissions: readonly string[],
  refusal = 'you cannot grant product permissions you do not hold',
): void {
  if (held === 'all') {
    return;
  }
  const beyond = permissions.filter((p) => !held.has(p));
  if (beyond.length > 0) {
    throw new AppError('forbidden', `${refusal}: ${beyond.join(', ')}`);
  }
}

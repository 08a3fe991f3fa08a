import { AppError } from '@svc/contracts/errors';
import type { Permission } from '@svc/contracts/permissions';
import type { DbOrTx } from '@svc/db/client';
import { type Access, authorize, type Principal, type UntrustedOrganizationRef } from './authorize.ts';

/** How `authorizeRecord` finds one kind of tenant-owned record. */
export type RecordLookup<T> = {
  /**
   * The organization a record id claims, read without a tenant predicate: untrusted until
   * `authorize` has accepted the caller there; undefined for an unknown id.
   */
  tenantOf: (db: DbOrTx, opts: { untrustedId: string }) => Promise<string | undefined>;
  /** The record read again under the authorized organization's predicate. */
  read: (db: DbOrTx, opts: { tenantId: string; id: string }) => Promise<T | undefined>;
  /** The message of every 404 this route answers, whatever its cause. */
  notFound: string;
};

/**
 * Authorizes an `{id}` route on one tenant-owned record and loads it. The organization is the one
 * named by `organization_slug` when the caller names one, else the one the id claims (untrusted
 * until `authorize` accepts the caller there); the record is then read again with the authorized
 * organization's predicate, so an id outside it is simply not found.
 *
 * Stops id probing: an unknown id, an id of an organization the caller cannot see and an id
 * outside the named organization all answer the same 404 (`not_found`, the same message), never
 * a 403 that would confirm the record exists. A missing permission in an organization the caller
 * belongs to stays the 403 `authorize` answers.
 */
export async function authorizeRecord<T>(
  db: DbOrTx,
  principal: Principal,
  opts: RecordLookup<T> & {
    untrustedId: string;
    organizationSlug?: string;
    permission: Permission;
    adminOnly?: boolean;
  },
): Promise<{ access: Access; record: T }> {
  let organization: UntrustedOrganizationRef;
  if (opts.organizationSlug !== undefined) {
    organization = { slug: opts.organizationSlug };
  } else {
    const untrustedTenantId = await opts.tenantOf(db, { untrustedId: opts.untrustedId });
    if (untrustedTenantId === undefined) {
      throw new AppError('not_found', opts.notFound);
    }
    organization = { id: untrustedTenantId };
  }
  let access: Access;
  try {
    access = await authorize(db, principal, { organization, permission: opts.permission, adminOnly: opts.adminOnly });
  } catch (error) {
    // Same message as an unknown id: which organization an id belongs to is not disclosed.
    if (error instanceof AppError && error.code === 'not_found') {
      throw new AppError('not_found', opts.notFound);
    }
    throw error;
  }
  const record = await opts.read(db, { tenantId: access.organization.id, id: opts.untrustedId });
  if (record === undefined) {
    // Outside the named organization, or deleted between the two reads.
    throw new AppError('not_found', opts.notFound);
  }
  return { access, record };
}

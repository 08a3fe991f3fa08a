import { AppError } from '@svc/contracts/errors';
import type { Permission } from '@svc/contracts/permissions';
import type { DbOrTx } from '@svc/db/client';
import type { ApplicationWithOrganization } from '@svc/db/queries/applications';
import { type Access, authorize, type Principal, type UntrustedOrganizationRef } from './authorize.ts';

/**
 * How a route finds the organization it acts on (docs/architecture.md section 3, "Access declared on the route"):
 * - `slug`: the input's `organization_slug`, else the caller's own (the session's workspace, an
 *   API key's organization);
 * - `id`: the input's `id` is the organization's (`/tenants/{id}`);
 * - a record: the input's `id` names a record of one organization (`/domains/{id}`). The
 *   organization is `organization_slug` when given, else the one the id claims, untrusted until
 *   `authorize` accepts the caller there; the service then reads the record under that
 *   organization's predicate, so an id outside it is simply not found;
 * - a function of the input, for a route that names its organization another way.
 */
export type OrganizationSource = 'slug' | 'id' | RecordSource | ((input: never) => UntrustedOrganizationRef);

/** A record kind whose `{id}` routes resolve their organization from the record. */
export type RecordSource = {
  /** The organization a record id claims, read without a tenant predicate; undefined for an unknown id. */
  tenantOf: (db: DbOrTx, opts: { untrustedId: string }) => Promise<string | undefined>;
  /** The message of every 404 the route answers, whatever its cause (the service's own read uses it too). */
  notFound: string;
};

/**
 * A permission the input decides (POST /v1/permissions/check: `feature` needs subscription.read,
 * a person's permission members.read): `of` picks it, `oneOf` lists every one it may pick, for
 * the OpenAPI document, the auth matrix and the client README, which cannot call `of`.
 */
export type PermissionOfInput = { of: (input: never) => Permission; oneOf: readonly [Permission, ...Permission[]] };

/**
 * A caller the rule does not describe, which the procedure judges by its own rule (`ctx.access`
 * is null for it, `resolveAccessOrOwnRule` in trpc/access.ts):
 * - `application`: an application's secret key, not a control-plane principal (the permission
 *   check and usage ingestion judge it by the application's own organization);
 * - `user`: a signed-in person, whose list of organizations is their own (GET /v1/tenants).
 */
export type OwnRuleCaller = 'application' | 'user';

/** An application's secret key calling a route that also admits one (`ownRuleFor: 'application'`). */
export type ApplicationCaller = { kind: 'application'; found: ApplicationWithOrganization };

/** What a route needs, declared in its meta (`Meta.access`) and resolved by `resolveAccess`. */
export type AccessRule = {
  permission: Permission | PermissionOfInput;
  organization: OrganizationSource;
  /** Only an org admin (or a platform admin; a key whose creator is one) may call it. */
  adminOnly?: true;
  /** A kind of caller the procedure judges itself (OwnRuleCaller); every other caller, this rule. */
  ownRuleFor?: OwnRuleCaller;
};

/** Every permission a rule may check: its one permission, or each one its input may pick. */
export function permissionsOf(rule: Pick<AccessRule, 'permission'>): readonly Permission[] {
  return typeof rule.permission === 'string' ? [rule.permission] : rule.permission.oneOf;
}

function isRecordSource(source: OrganizationSource): source is RecordSource {
  return typeof source === 'object';
}

export type AccessInput = { id?: string; organization_slug?: string };

/**
 * Resolves the route's declared access, before its handler and after its input schema (so a
 * malformed input is a 400 before anything is read): the organization, the caller's role and
 * effective permissions there, by the one rule of modules/access/authorize.ts (404 for an
 * organization the caller cannot see, then the subscription rule's 402, then 403). The handler
 * receives `ctx.access` and checks nothing more about who calls.
 */
export async function accessOf(db: DbOrTx, principal: Principal, rule: AccessRule, input: AccessInput): Promise<Access> {
  const source = rule.organization;
  const permission = typeof rule.permission === 'string' ? rule.permission : rule.permission.of(input as never);
  if (!isRecordSource(source)) {
    const organization: UntrustedOrganizationRef =
      source === 'slug' ? { slug: input.organization_slug } : source === 'id' ? { id: input.id } : source(input as never);
    return authorize(db, principal, { organization, permission, adminOnly: rule.adminOnly });
  }
  const untrustedId = input.id as string;
  let organization: UntrustedOrganizationRef;
  if (input.organization_slug !== undefined) {
    organization = { slug: input.organization_slug };
  } else {
    const tenantId = await source.tenantOf(db, { untrustedId });
    if (tenantId === undefined) {
      throw new AppError('not_found', source.notFound);
    }
    organization = { id: tenantId };
  }
  try {
    return await authorize(db, principal, { organization, permission, adminOnly: rule.adminOnly });
  } catch (error) {
    // Same message as an unknown id: which organization an id belongs to is not disclosed.
    if (error instanceof AppError && error.code === 'not_found') {
      throw new AppError('not_found', source.notFound);
    }
    throw error;
  }
}

/**
 * A record of the organization `access` resolved, read under its tenant predicate: an id outside
 * it (or deleted since) answers the route's one 404, exactly like an unknown id.
 */
export async function recordIn<T>(
  db: DbOrTx,
  access: Access,
  read: (db: DbOrTx, opts: { tenantId: string; id: string }) => Promise<T | undefined>,
  id: string,
  notFound: string,
): Promise<T> {
  const record = await read(db, { tenantId: access.organization.id, id });
  if (record === undefined) {
    throw new AppError('not_found', notFound);
  }
  return record;
}

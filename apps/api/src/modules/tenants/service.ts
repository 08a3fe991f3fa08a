import { createHash } from 'node:crypto';
import { AppError } from '@svc/contracts/errors';
import { newId, randomBase62 } from '@svc/contracts/ids';
import { PERMISSION_CATALOG } from '@svc/contracts/permissions';
import type {
  TCheckPermissionRequest,
  TCheckPermissionResponse,
  TCreateTenantRequest,
  TDeleteTenantResponse,
  TListTenantMembersRequest,
  TListTenantsRequest,
  TPermissionCatalog,
  TTenant,
  TTenantMemberPage,
  TTenantOverview,
  TTenantPage,
  TTenantSummary,
  TUpdateTenantRequest,
} from '@svc/contracts/tenants';
import type { Db, DbOrTx } from '@svc/db/client';
import { decodeCursor, toPage } from '@svc/db/pagination';
import { insertMembership } from '@svc/db/queries/identity';
import { insertOrganization, type OrganizationRow, updateOrganization } from '@svc/db/queries/organizations';
import {
  deleteTenantOrganization,
  findTenantOverview,
  listMembers,
  listOrganizations,
  lockTenantOrganization,
  moveSessionsOutOf,
  type OrganizationListFilter,
  type OrganizationSummaryRow,
} from '@svc/db/queries/tenants';
import { detachEventDeliveries } from '@svc/db/queries/webhook-events';
import type { AccessRule } from '../access/access-rule.ts';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import { type Access, isPlatformAdmin } from '../access/authorize.ts';
import type { UserPrincipal } from '../access/principal.ts';
import { PLATFORM_ORGANIZATION_SLUG } from '../identity/service.ts';
import { monthOf } from '../usage/service.ts';

/**
 * Slugs svc itself looks organizations up by. A tenant holding one would be found in their
 * place: a tenant named `platform` created before the first platform admin signs in would
 * receive every platform admin as its member. (`keyless-development`: modules/applications.)
 */
const RESERVED_SLUGS: ReadonlySet<string> = new Set([PLATFORM_ORGANIZATION_SLUG, 'keyless-development']);

export function toTenant(row: OrganizationRow): TTenant {
  if (row.kind === 'keyless') {
    throw new Error('the keyless workspace is never shown');
  }
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    kind: row.kind,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/**
 * GET /v1/tenants: a tenant API key needs `tenant.read` in its own organization; a signed-in
 * person lists their own memberships (or, a platform admin, every organization), which the
 * service decides itself.
 */
export const LIST_TENANTS_ACCESS = { permission: 'tenant.read', organization: 'slug', ownRuleFor: 'user' } as const satisfies AccessRule;

/**
 * The caller's organizations, newest first: a user's memberships, every organization for a
 * platform admin, a tenant API key's own (its access, LIST_TENANTS_ACCESS); `q` narrows them to
 * those whose name or slug contains it. A platform admin's items carry each organization's
 * summary (members, subscription): the Organizations page reads a page in one statement.
 */
export async function listTenants(db: Db, caller: Access | UserPrincipal, input: TListTenantsRequest): Promise<TTenantPage> {
  let filter: OrganizationListFilter;
  let scope: string;
  if ('organization' in caller) {
    filter = { kind: 'one', tenantId: caller.organization.id };
    scope = `tenants:key:${caller.organization.id}`;
  } else if (isPlatformAdmin(caller)) {
    filter = { kind: 'all' };
    scope = 'tenants:all';
  } else {
    filter = { kind: 'member', userId: caller.user.id };
    scope = `tenants:member:${caller.user.id}`;
  }
  const search = input.q || undefined;
  if (search !== undefined) {
    // The search is part of the list a cursor continues; as a digest, so that a long search in
    // any script keeps the cursor well inside its length limit.
    scope += `:q:${createHash('sha256').update(search).digest('base64url').slice(0, 22)}`;
  }
  const cursor = decodeCursor(scope, input.cursor);
  const rows = await listOrganizations(db, { filter, search, withSummary: filter.kind === 'all', cursor, limit: input.limit });
  return toPage(scope, rows, input.limit, (row) => ({ ...toTenant(row), summary: row.summary && toTenantSummary(row.summary) }));
}

function toTenantSummary(row: OrganizationSummaryRow): TTenantSummary {
  return {
    memberCount: row.memberCount,
    subscription: row.subscription && {
      plan: { key: row.subscription.planKey, name: row.subscription.planName },
      status: row.subscription.status,
    },
  };
}

/**
 * GET /v1/tenants/{id}/overview (tenant.read): the Overview page's counts, this calendar month's
 * usage (UTC) against the plan's limits, and the getting-started checklist, in one statement.
 * Counts and flags only: the records stay behind their own permissions.
 */
export async function getTenantOverview(db: Db, { organization }: Access, now = Date.now()): Promise<TTenantOverview> {
  const month = monthOf(now);
  const periodStart = new Date(month.start);
  const periodEnd = new Date(month.end);
  const row = await findTenantOverview(db, { tenantId: organization.id, periodStart, periodEnd, now: new Date(now) });
  return {
    counts: { members: row.members, applications: row.applications, activeSessions: row.activeSessions },
    usage: {
      periodStart: periodStart.toISOString(),
      periodEnd: periodEnd.toISOString(),
      events: row.usageEvents,
      limits: row.usageLimits,
    },
    checklist: {
      applicationCreated: row.applications > 0,
      signInTried: row.signInTried,
      memberInvited: row.memberInvited,
      webhookAdded: row.webhookAdded,
    },
  };
}

export function getTenant({ organization }: Access): TTenant {
  return toTenant(organization);
}

function refuseReserved(slug: string): void {
  if (RESERVED_SLUGS.has(slug)) {
    throw new AppError('conflict', `the slug ${slug} is reserved`);
  }
}

/** A slug from a display name: ASCII letters and digits joined by single hyphens, 2-41 characters. */
export function slugFromName(name: string): string {
  const slug = name
    .normalize('NFKD')
    // NFKD splits "é" into "e" and a combining accent: keep the letter, drop the accent.
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 41)
    .replace(/-+$/g, '');
  return slug.length >= 2 ? slug : `org${slug ? `-${slug}` : ''}`;
}

/**
 * Inserts the organization under the slug derived from its name, or, when that one is taken
 * or reserved, under the slug plus a random suffix. A taken slug is never reused: that would
 * make the caller an admin of someone else's organization.
 */
async function insertWithDerivedSlug(tx: DbOrTx, name: string): Promise<OrganizationRow> {
  const base = slugFromName(name);
  for (let attempt = 0; attempt < 6; attempt++) {
    const slug = attempt === 0 ? base : `${base}-${randomBase62(6).toLowerCase()}`;
    if (RESERVED_SLUGS.has(slug)) {
      continue;
    }
    const created = await insertOrganization(tx, { id: newId('organization'), slug, name, kind: 'tenant' });
    if (created) {
      return created;
    }
  }
  throw new Error('could not find a free organization slug');
}

/** Creates a tenant organization; the signed-in creator becomes its org_admin (409 for a taken slug). */
export async function createTenant(db: Db, principal: UserPrincipal, request: RequestMeta, input: TCreateTenantRequest): Promise<TTenant> {
  if (input.slug !== undefined) {
    refuseReserved(input.slug);
  }
  return db.transaction(async (tx) => {
    let created: OrganizationRow | undefined;
    if (input.slug === undefined) {
      created = await insertWithDerivedSlug(tx, input.name);
    } else {
      created = await insertOrganization(tx, { id: newId('organization'), slug: input.slug, name: input.name, kind: 'tenant' });
      if (!created) {
        throw new AppError('conflict', `the slug ${input.slug} is taken`);
      }
    }
    await insertMembership(tx, { tenantId: created.id, userId: principal.user.id, roleKey: 'org_admin' });
    await recordAudit(tx, principal, request, {
      tenantId: created.id,
      action: 'tenant.created',
      target: { type: 'tenant', id: created.id },
      summary: { name: created.name, slug: created.slug },
    });
    return toTenant(created);
  });
}

/** Renames an organization or changes its slug (409 when the slug is taken or reserved). */
export async function updateTenant(db: Db, access: Access, request: RequestMeta, input: TUpdateTenantRequest): Promise<TTenant> {
  if (input.slug !== undefined && input.slug !== access.organization.slug) {
    // Sign-in finds the platform workspace by its slug: renamed, a second one would appear.
    if (access.organization.kind === 'platform') {
      throw new AppError('conflict', 'the slug of the platform workspace cannot change');
    }
    refuseReserved(input.slug);
  }
  return db.transaction(async (tx) => {
    const updated = await updateOrganization(tx, { id: access.organization.id, name: input.name, slug: input.slug });
    if (!updated) {
      throw new AppError('conflict', `the slug ${input.slug} is taken`);
    }
    await recordAudit(tx, access.principal, request, {
      tenantId: updated.id,
      action: 'tenant.updated',
      target: { type: 'tenant', id: updated.id },
      // Each field that changed, before and after (docs/api.md "Audit log").
      summary: {
        changes: {
          ...(updated.name !== access.organization.name ? { name: { from: access.organization.name, to: updated.name } } : {}),
          ...(updated.slug !== access.organization.slug ? { slug: { from: access.organization.slug, to: updated.slug } } : {}),
        },
      },
    });
    return toTenant(updated);
  });
}

/**
 * Deletes a tenant organization and everything it owns (org admins and platform admins; never
 * the platform workspace), as docs/api.md "Retention" states: its usage ledger, billing sync
 * logs, webhooks, exports and every other tenant row go at once, by cascade. What survives:
 * - the organization's audit entries (the database refuses to delete them; audit_logs.tenant_id
 *   has no foreign key), and the deletion itself as a platform-level entry (tenant_id null,
 *   target the organization), which platform admins read in the platform workspace's log;
 * - `tenant.deleted` for the organization's endpoints subscribed to it: their rows go with the
 *   organization, so the deliveries are handed to self-contained jobs first (detachEventDeliveries).
 * Sessions that were in it move to another of their user's organizations, so deleting the
 * organization you are in leaves you signed in elsewhere.
 */
export async function deleteTenant(db: Db, access: Access, request: RequestMeta): Promise<TDeleteTenantResponse> {
  const { organization } = access;
  if (organization.kind !== 'tenant') {
    throw new AppError('conflict', 'the platform workspace cannot be deleted');
  }
  return db.transaction(async (tx) => {
    // Another request may have deleted it since authorize read it: then there is nothing to delete.
    if (!(await lockTenantOrganization(tx, { tenantId: organization.id }))) {
      throw new AppError('not_found', 'organization not found');
    }
    const event = await recordAudit(tx, access.principal, request, {
      tenantId: null,
      eventTenantId: organization.id,
      action: 'tenant.deleted',
      target: { type: 'tenant', id: organization.id },
      summary: { name: organization.name, slug: organization.slug },
    });
    if (event && event.deliveryIds.length > 0) {
      await detachEventDeliveries(tx, { tenantId: organization.id, eventId: event.id });
    }
    await moveSessionsOutOf(tx, { tenantId: organization.id });
    if (!(await deleteTenantOrganization(tx, { tenantId: organization.id }))) {
      throw new AppError('not_found', 'organization not found');
    }
    return { id: organization.id, deleted: true };
  });
}

/** An organization's members with their role keys, newest first. */
export async function listTenantMembers(db: Db, { organization }: Access, input: TListTenantMembersRequest): Promise<TTenantMemberPage> {
  const scope = `members:${organization.id}`;
  const cursor = decodeCursor(scope, input.cursor);
  const rows = await listMembers(db, { tenantId: organization.id, cursor, limit: input.limit });
  return toPage(
    scope,
    rows.map((row) => ({ ...row, id: row.userId })),
    input.limit,
    (row) => ({
      userId: row.userId,
      email: row.email,
      name: row.name,
      roleKey: row.roleKey,
      status: row.status,
      joinedAt: row.createdAt.toISOString(),
    }),
  );
}

/** GET /v1/permissions: the catalog every role and API-key scope draws from. */
export function listPermissions(): TPermissionCatalog {
  return { data: PERMISSION_CATALOG, nextCursor: null };
}

/**
 * Whether the caller holds `permission` in the organization: its role's permissions for a user
 * (all for a platform admin), its scopes for an API key. Asking needs `tenant.read` there.
 */
export function checkPermission(access: Access, input: TCheckPermissionRequest): TCheckPermissionResponse {
  return { permission: input.permission, allowed: access.permissions.has(input.permission) };
}

import { and, desc, eq, like, or, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { type ExportSection, exportField } from '../export-section.ts';
import { afterCursor, type Cursor } from '../pagination.ts';
import { applications } from '../schema/applications.ts';
import { organizations } from '../schema/organizations.ts';

export type ApplicationRow = typeof applications.$inferSelect;
export type NewApplicationRow = typeof applications.$inferInsert;
/** An application with the organization that owns it, as the key lookups return it. */
export type ApplicationWithOrganization = {
  application: ApplicationRow;
  organization: { id: string; slug: string; name: string };
};

const withOrganization = {
  application: applications,
  organization: { id: organizations.id, slug: organizations.slug, name: organizations.name },
};

// Key lookups resolve the tenant, so they cannot carry a tenant predicate; they match on a
// unique key column only and return the owning organization with the application.

export async function findApplicationByPublishableKey(
  db: DbOrTx,
  publishableKey: string,
): Promise<ApplicationWithOrganization | undefined> {
  const [row] = await db
    .select(withOrganization)
    .from(applications)
    .innerJoin(organizations, eq(organizations.id, applications.tenantId))
    .where(eq(applications.publishableKey, publishableKey))
    .limit(1);
  return row;
}

export async function findApplicationBySecretKeyHash(db: DbOrTx, secretKeyHash: string): Promise<ApplicationWithOrganization | undefined> {
  const [row] = await db
    .select(withOrganization)
    .from(applications)
    .innerJoin(organizations, eq(organizations.id, applications.tenantId))
    .where(eq(applications.secretKeyHash, secretKeyHash))
    .limit(1);
  return row;
}

/** By id, across tenants: the OpenID Provider's client lookup (client_id is the application id). */
export async function findApplicationWithOrganizationById(db: DbOrTx, id: string): Promise<ApplicationWithOrganization | undefined> {
  const [row] = await db
    .select(withOrganization)
    .from(applications)
    .innerJoin(organizations, eq(organizations.id, applications.tenantId))
    .where(eq(applications.id, id))
    .limit(1);
  return row;
}

export async function findKeylessApplication(db: DbOrTx): Promise<ApplicationWithOrganization | undefined> {
  const [row] = await db
    .select(withOrganization)
    .from(applications)
    .innerJoin(organizations, eq(organizations.id, applications.tenantId))
    .where(eq(applications.isKeyless, true))
    .limit(1);
  return row;
}

/**
 * The application `id` (any tenant), its row locked until the transaction ends: claiming the
 * keyless application reads it under this lock, so of two racing claims one moves it and the
 * other finds it no longer keyless.
 */
export async function lockApplicationById(db: DbOrTx, id: string): Promise<ApplicationRow | undefined> {
  const [row] = await db.select().from(applications).where(eq(applications.id, id)).for('update').limit(1);
  return row;
}

/** Slugs of `tenantId` that are `base` or `base-<anything>`: what a new slug must avoid. */
export async function findSlugsLike(db: DbOrTx, opts: { tenantId: string; base: string }): Promise<Set<string>> {
  const escaped = opts.base.replace(/[\\%_]/g, (c) => `\\${c}`);
  const rows = await db
    .select({ slug: applications.slug })
    .from(applications)
    .where(and(eq(applications.tenantId, opts.tenantId), or(eq(applications.slug, opts.base), like(applications.slug, `${escaped}-%`))));
  return new Set(rows.map((r) => r.slug));
}

/**
 * Claims the keyless development application: it becomes an ordinary application of `tenantId`
 * with the same id and publishable key, a name and slug there, a new secret key and the client
 * type chosen at the claim. The URLs it remembered while keyless (rememberKeylessUrl) stay on it
 * as its registered ones. Only while it is still keyless; the row after, or undefined. The update
 * fires the change notification, so every process drops its cached copy (and its cached keyless
 * application).
 */
export async function claimKeylessApplicationRow(
  db: DbOrTx,
  opts: {
    id: string;
    tenantId: string;
    name: string;
    slug: string;
    secretKeyHash: string;
    secretKeyPrefix: string;
    clientType: 'confidential' | 'public';
  },
): Promise<ApplicationRow | undefined> {
  const [row] = await db
    .update(applications)
    .set({
      tenantId: opts.tenantId,
      name: opts.name,
      slug: opts.slug,
      secretKeyHash: opts.secretKeyHash,
      secretKeyPrefix: opts.secretKeyPrefix,
      clientType: opts.clientType,
      isKeyless: false,
      updatedAt: new Date(),
    })
    .where(and(eq(applications.id, opts.id), eq(applications.isKeyless, true)))
    .returning();
  return row;
}

/** The URL lists the keyless development application remembers (rememberKeylessUrl). */
export type KeylessUrlList = 'redirectUrls' | 'allowedOrigins' | 'postLogoutRedirectUrls';

/**
 * Adds `value` to one URL list of the keyless development application `id`, unless it is there
 * already (then nothing is written), keeping the newest `keep` entries. Only while the row is
 * keyless: a claimed application's lists are its owner's to change.
 */
export async function rememberKeylessUrl(
  db: DbOrTx,
  opts: { id: string; list: KeylessUrlList; value: string; keep: number },
): Promise<boolean> {
  const column = applications[opts.list];
  const rows = await db
    .update(applications)
    .set({
      // The newest `keep` entries: array_append, then the tail slice (1-based, inclusive).
      [opts.list]: sql`(array_append(${column}, ${opts.value}::text))[greatest(1, cardinality(${column}) + 2 - ${opts.keep}::int):]`,
    })
    .where(and(eq(applications.id, opts.id), eq(applications.isKeyless, true), sql`not (${opts.value}::text = any(${column}))`))
    .returning({ id: applications.id });
  return rows.length === 1;
}

/** Inserts unless it conflicts (slug in tenant, or a second keyless app); true when inserted. */
export async function insertApplication(db: DbOrTx, values: NewApplicationRow): Promise<boolean> {
  const inserted = await db.insert(applications).values(values).onConflictDoNothing().returning({ id: applications.id });
  return inserted.length === 1;
}

/**
 * Operator lookup for the command line: by id, or by slug (optionally within one organization).
 * Returns every match so the caller can refuse an ambiguous slug.
 */
export async function findApplicationsByIdOrSlug(
  db: DbOrTx,
  opts: { idOrSlug: string; organizationSlug?: string },
): Promise<ApplicationWithOrganization[]> {
  const match = or(eq(applications.id, opts.idOrSlug), eq(applications.slug, opts.idOrSlug));
  return db
    .select(withOrganization)
    .from(applications)
    .innerJoin(organizations, eq(organizations.id, applications.tenantId))
    .where(opts.organizationSlug ? and(match, eq(organizations.slug, opts.organizationSlug)) : match)
    .limit(10);
}

export async function setApplicationStatus(
  db: DbOrTx,
  opts: { tenantId: string; id: string; status: ApplicationRow['status'] },
): Promise<ApplicationRow | undefined> {
  const [row] = await db
    .update(applications)
    .set({ status: opts.status, updatedAt: new Date() })
    .where(and(eq(applications.tenantId, opts.tenantId), eq(applications.id, opts.id)))
    .returning();
  return row;
}

export async function setApplicationSecret(
  db: DbOrTx,
  opts: { tenantId: string; id: string; secretKeyHash: string; secretKeyPrefix: string },
): Promise<ApplicationRow | undefined> {
  const [row] = await db
    .update(applications)
    .set({ secretKeyHash: opts.secretKeyHash, secretKeyPrefix: opts.secretKeyPrefix, updatedAt: new Date() })
    .where(and(eq(applications.tenantId, opts.tenantId), eq(applications.id, opts.id)))
    .returning();
  return row;
}

// Control-plane reads and writes (the /v1/applications routes). Every statement carries the
// tenant predicate, and the keyless development application is never among the rows.

/**
 * The tenant an application id claims to belong to, for authorizing a route on `/applications/{id}`
 * before anything of the application is read. The answer is untrusted until `authorize` accepted
 * the caller in that tenant; undefined for an unknown id or the keyless application.
 */
export async function findApplicationTenantId(db: DbOrTx, opts: { id: string }): Promise<string | undefined> {
  const [row] = await db
    .select({ tenantId: applications.tenantId })
    .from(applications)
    .where(and(eq(applications.id, opts.id), eq(applications.isKeyless, false)))
    .limit(1);
  return row?.tenantId;
}

export async function findApplication(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<ApplicationRow | undefined> {
  const [row] = await db
    .select()
    .from(applications)
    .where(and(eq(applications.tenantId, opts.tenantId), eq(applications.id, opts.id), eq(applications.isKeyless, false)))
    .limit(1);
  return row;
}

/** One page (plus one row, which only says there is a next page), newest first. */
export async function listApplications(
  db: DbOrTx,
  opts: { tenantId: string; status?: ApplicationRow['status']; cursor?: Cursor; limit: number },
): Promise<ApplicationRow[]> {
  return db
    .select()
    .from(applications)
    .where(
      and(
        eq(applications.tenantId, opts.tenantId),
        eq(applications.isKeyless, false),
        opts.status ? eq(applications.status, opts.status) : undefined,
        afterCursor(applications.createdAt, applications.id, opts.cursor),
      ),
    )
    .orderBy(desc(applications.createdAt), desc(applications.id))
    .limit(opts.limit + 1);
}

/** Changes the given settings (undefined leaves a field as it is); the row after, or undefined. */
export async function updateApplicationSettings(
  db: DbOrTx,
  opts: {
    tenantId: string;
    id: string;
    name?: string;
    logoUrl?: string | null;
    redirectUrls?: string[];
    allowedOrigins?: string[];
    postLogoutRedirectUrls?: string[];
    backchannelLogoutUrl?: string | null;
    clientType?: ApplicationRow['clientType'];
    signInAudience?: ApplicationRow['signInAudience'];
    oauth?: ApplicationRow['oauth'];
    tokenEndpointAuthMethod?: ApplicationRow['tokenEndpointAuthMethod'];
    jwks?: ApplicationRow['jwks'];
    jwksUri?: string | null;
    machinePermissions?: string[];
  },
): Promise<ApplicationRow | undefined> {
  const [row] = await db
    .update(applications)
    .set({
      name: opts.name,
      logoUrl: opts.logoUrl,
      redirectUrls: opts.redirectUrls,
      allowedOrigins: opts.allowedOrigins,
      postLogoutRedirectUrls: opts.postLogoutRedirectUrls,
      backchannelLogoutUrl: opts.backchannelLogoutUrl,
      clientType: opts.clientType,
      signInAudience: opts.signInAudience,
      oauth: opts.oauth,
      tokenEndpointAuthMethod: opts.tokenEndpointAuthMethod,
      jwks: opts.jwks,
      jwksUri: opts.jwksUri,
      machinePermissions: opts.machinePermissions,
      updatedAt: new Date(),
    })
    .where(and(eq(applications.tenantId, opts.tenantId), eq(applications.id, opts.id), eq(applications.isKeyless, false)))
    .returning();
  return row;
}

/**
 * In an export (queries/exports.ts): the organization's applications; never the secret key hashes
 * or their display prefixes.
 */
export const applicationsExportSection: ExportSection = {
  key: 'applications',
  resource: 'application',
  shape: 'many',
  source: 'snapshot',
  from: 'applications t',
  tenantColumn: 't.tenant_id',
  orderBy: 't.created_at, t.id',
  fields: [
    exportField.text('id', 't.id'),
    exportField.text('slug', 't.slug'),
    exportField.text('name', 't.name'),
    exportField.text('logoUrl', 't.logo_url'),
    exportField.text('status', 't.status'),
    // Public by design: it identifies the application to browsers (never the secret key).
    exportField.text('publishableKey', 't.publishable_key'),
    exportField.json('redirectUrls', 't.redirect_urls'),
    exportField.json('allowedOrigins', 't.allowed_origins'),
    exportField.text('oauthProductionProvider', "t.oauth->>'productionProvider'"),
    exportField.time('createdAt', 't.created_at'),
    exportField.time('updatedAt', 't.updated_at'),
  ],
};

/**
 * Every application (the keyless development application too, which `isKeyless` marks), newest
 * first, with its organization; only `organizationSlug`'s when given. For the operator's command
 * line (`svc apps list`), which acts across organizations.
 */
export async function listApplicationsForOperator(
  db: DbOrTx,
  opts: { organizationSlug?: string } = {},
): Promise<ApplicationWithOrganization[]> {
  return db
    .select(withOrganization)
    .from(applications)
    .innerJoin(organizations, eq(organizations.id, applications.tenantId))
    .where(opts.organizationSlug === undefined ? undefined : eq(organizations.slug, opts.organizationSlug))
    .orderBy(desc(applications.createdAt), desc(applications.id));
}

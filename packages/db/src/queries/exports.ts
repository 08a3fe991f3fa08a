import { and, eq, inArray, type SQL, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { afterCursor, type Cursor } from '../pagination.ts';
import { exportSnapshots } from '../schema/exports.ts';

export type ExportRow = typeof exportSnapshots.$inferSelect;
/** The record without its snapshot (which can be large): what reads and lists need. */
export type ExportRecordRow = Omit<ExportRow, 'snapshot' | 'requestedBy'>;

/*
 * What an export contains, field by field. This file is the allowlist: a column that is not
 * named here never leaves svc in an export, whatever is added to the tables later. Left out on
 * purpose: API key and application secret hashes and their `sk_live_` display prefixes,
 * invitation token hashes, session token hashes, webhook signing secret ciphertexts (current and
 * previous), email body ciphertexts and the email provider's message ids and error texts,
 * webhook attempt excerpts, billing sync failure reasons (they may quote a provider), usage
 * events' request hashes, and the workers' claim columns (locked_until, locked_by).
 *
 * Every field is a SQL expression over the section's own table (alias `t`), so each row is
 * built by PostgreSQL as one JSON object (fields in this order) and reaches Node as text: a
 * download of millions of usage events parses nothing for JSON.
 * The SQL strings are constants of this file, never input.
 */

/** How a field is rendered: `number` cells are never formula-neutralised in CSV (they cannot hold text). */
export type ExportFieldKind = 'text' | 'number' | 'boolean' | 'time' | 'json';
export type ExportField = { name: string; kind: ExportFieldKind; sql: string };

/**
 * A resource of the export. `snapshot` sections are captured into the export record when it is
 * built (they are small: what admins create); `table` sections are read from their table at
 * download time, limited to rows created at or before the snapshot's `as_of` (usage events and
 * the audit log are append-only, so those are exact; the others show their state at download).
 */
export type ExportSection = {
  /** The JSON document's key (camelCase, plural for lists). */
  key: string;
  /** The CSV `resource` column (snake_case, singular). */
  resource: string;
  /** `one`: an object (or null) in JSON; `many`: an array. */
  shape: 'one' | 'many';
  source: 'snapshot' | 'table';
  from: string;
  /** The tenant predicate's column (compared with the organization id, as a parameter). */
  tenantColumn: string;
  /** `table` sections: the column compared with `as_of`. */
  asOfColumn?: string;
  /** A further predicate (static SQL). */
  where?: string;
  orderBy: string;
  fields: readonly ExportField[];
};

const time = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const f = {
  text: (name: string, column: string): ExportField => ({ name, kind: 'text', sql: column }),
  number: (name: string, column: string): ExportField => ({ name, kind: 'number', sql: column }),
  boolean: (name: string, column: string): ExportField => ({ name, kind: 'boolean', sql: column }),
  time: (name: string, column: string): ExportField => ({ name, kind: 'time', sql: time(column) }),
  json: (name: string, column: string): ExportField => ({ name, kind: 'json', sql: column }),
};

export const EXPORT_SECTIONS: readonly ExportSection[] = [
  {
    key: 'organization',
    resource: 'organization',
    shape: 'one',
    source: 'snapshot',
    from: 'organizations t',
    tenantColumn: 't.id',
    orderBy: 't.id',
    fields: [
      f.text('id', 't.id'),
      f.text('slug', 't.slug'),
      f.text('name', 't.name'),
      f.time('createdAt', 't.created_at'),
      f.time('updatedAt', 't.updated_at'),
    ],
  },
  {
    key: 'subscription',
    resource: 'subscription',
    shape: 'one',
    source: 'snapshot',
    from: 'subscriptions t join subscription_plans p on p.id = t.plan_id',
    tenantColumn: 't.tenant_id',
    orderBy: 't.tenant_id',
    fields: [
      f.text('planId', 't.plan_id'),
      f.text('planKey', 'p.key'),
      f.text('planName', 'p.name'),
      f.text('status', 't.status'),
      f.number('seats', 't.seats'),
      f.number('seatLimit', 'p.seat_limit'),
      f.json('usageLimits', 'p.usage_limits'),
      f.time('createdAt', 't.created_at'),
      f.time('updatedAt', 't.updated_at'),
    ],
  },
  {
    key: 'members',
    resource: 'member',
    shape: 'many',
    source: 'snapshot',
    from: 'memberships t join users u on u.id = t.user_id',
    tenantColumn: 't.tenant_id',
    orderBy: 't.created_at, t.user_id',
    // As GET /v1/users shows them: a member who has not accepted yet is only what the
    // organization typed (modules/users toUser); `status` is the membership's.
    fields: [
      f.text('id', 'u.id'),
      f.text('email', "case when t.status = 'invited' then coalesce(t.invited_email, u.email) else u.email end"),
      f.text('name', "case when t.status = 'invited' then coalesce(t.invited_name, '') else u.name end"),
      f.boolean('emailVerified', "(u.email_verified and t.status <> 'invited')"),
      f.text('status', 't.status'),
      f.text('roleKey', 't.role_key'),
      f.time('lastSignInAt', "case when t.status = 'invited' then null else u.last_sign_in_at end"),
      f.time('joinedAt', 't.created_at'),
      f.time('createdAt', "case when t.status = 'invited' then t.created_at else u.created_at end"),
    ],
  },
  {
    key: 'roles',
    resource: 'role',
    shape: 'many',
    source: 'snapshot',
    from: 'roles t',
    tenantColumn: 't.tenant_id',
    orderBy: 't.created_at, t.id',
    fields: [
      f.text('id', 't.id'),
      f.text('key', 't.key'),
      f.text('name', 't.name'),
      f.json('permissions', 't.permissions'),
      f.time('createdAt', 't.created_at'),
      f.time('updatedAt', 't.updated_at'),
    ],
  },
  {
    key: 'invitations',
    resource: 'invitation',
    shape: 'many',
    source: 'snapshot',
    from: 'invitations t',
    tenantColumn: 't.tenant_id',
    orderBy: 't.created_at, t.id',
    fields: [
      f.text('id', 't.id'),
      f.text('email', 't.email'),
      f.text('roleKey', 't.role_key'),
      // The derivation of queries/invitations.ts invitationStatus, at the snapshot's instant.
      f.text(
        'status',
        "case when t.revoked_at is not null then 'revoked' when t.accepted_at is not null then 'accepted' when t.expires_at <= now() then 'expired' else 'pending' end",
      ),
      f.boolean('requireEmailMatch', 't.require_email_match'),
      f.text('invitedByUserId', 't.invited_by_user_id'),
      f.time('expiresAt', 't.expires_at'),
      f.time('acceptedAt', 't.accepted_at'),
      f.text('acceptedByUserId', 't.accepted_by_user_id'),
      f.time('revokedAt', 't.revoked_at'),
      f.time('createdAt', 't.created_at'),
    ],
  },
  {
    key: 'apiKeys',
    resource: 'api_key',
    shape: 'many',
    source: 'snapshot',
    from: 'api_keys t',
    tenantColumn: 't.tenant_id',
    orderBy: 't.created_at, t.id',
    fields: [
      f.text('id', 't.id'),
      f.text('name', 't.name'),
      f.json('scopes', 't.scopes'),
      f.text(
        'status',
        "case when t.revoked_at is not null then 'revoked' when t.expires_at is not null and t.expires_at <= now() then 'expired' else 'active' end",
      ),
      f.text('createdByUserId', 't.created_by_user_id'),
      f.time('expiresAt', 't.expires_at'),
      f.time('revokedAt', 't.revoked_at'),
      f.time('lastUsedAt', 't.last_used_at'),
      f.time('rotatedAt', 't.rotated_at'),
      f.time('createdAt', 't.created_at'),
    ],
  },
  {
    key: 'applications',
    resource: 'application',
    shape: 'many',
    source: 'snapshot',
    from: 'applications t',
    tenantColumn: 't.tenant_id',
    orderBy: 't.created_at, t.id',
    fields: [
      f.text('id', 't.id'),
      f.text('slug', 't.slug'),
      f.text('name', 't.name'),
      f.text('status', 't.status'),
      // Public by design: it identifies the application to browsers (never the secret key).
      f.text('publishableKey', 't.publishable_key'),
      f.json('redirectUrls', 't.redirect_urls'),
      f.json('allowedOrigins', 't.allowed_origins'),
      f.text('oauthProductionProvider', "t.oauth->>'productionProvider'"),
      f.time('createdAt', 't.created_at'),
      f.time('updatedAt', 't.updated_at'),
    ],
  },
  {
    key: 'webhookEndpoints',
    resource: 'webhook_endpoint',
    shape: 'many',
    source: 'snapshot',
    from: 'webhook_endpoints t',
    tenantColumn: 't.tenant_id',
    orderBy: 't.created_at, t.id',
    fields: [
      f.text('id', 't.id'),
      f.text('url', 't.url'),
      f.text('description', 't.description'),
      f.json('eventTypes', 't.event_types'),
      f.boolean('enabled', 't.enabled'),
      f.text('disabledReason', 't.disabled_reason'),
      f.time('disabledAt', 't.disabled_at'),
      f.time('secretRotatedAt', 't.secret_rotated_at'),
      f.time('createdAt', 't.created_at'),
      f.time('updatedAt', 't.updated_at'),
    ],
  },
  {
    key: 'billingProviders',
    resource: 'billing_provider',
    shape: 'many',
    source: 'snapshot',
    from: 'billing_providers t',
    tenantColumn: 't.tenant_id',
    orderBy: 't.created_at, t.id',
    fields: [
      f.text('id', 't.id'),
      f.text('provider', 't.provider'),
      f.text('externalAccountId', 't.external_account_id'),
      f.text('mode', 't.mode'),
      f.text('status', 't.status'),
      f.time('createdAt', 't.created_at'),
      f.time('updatedAt', 't.updated_at'),
    ],
  },
  {
    key: 'billingMappings',
    resource: 'billing_mapping',
    shape: 'many',
    source: 'snapshot',
    from: 'billing_mappings t',
    tenantColumn: 't.tenant_id',
    orderBy: 't.created_at, t.id',
    fields: [
      f.text('id', 't.id'),
      f.text('provider', 't.provider'),
      f.text('eventType', 't.event_type'),
      f.text('providerItemId', 't.provider_item_id'),
      f.time('createdAt', 't.created_at'),
      f.time('updatedAt', 't.updated_at'),
    ],
  },
  {
    key: 'emailDeliveries',
    resource: 'email_delivery',
    shape: 'many',
    source: 'snapshot',
    from: 'email_deliveries t',
    tenantColumn: 't.tenant_id',
    orderBy: 't.created_at, t.id',
    fields: [
      f.text('id', 't.id'),
      f.text('kind', 't.kind'),
      f.text('invitationId', 't.invitation_id'),
      f.text('recipient', 't.recipient'),
      f.text('subject', 't.subject'),
      f.text('status', 't.status'),
      f.number('attemptCount', 't.attempt_count'),
      f.time('nextAttemptAt', 't.next_attempt_at'),
      f.time('lastAttemptAt', 't.last_attempt_at'),
      f.time('sentAt', 't.sent_at'),
      // The public metadata keys only (contracts ZEmailDeliveryMetadata), whatever else the row holds.
      f.json(
        'metadata',
        "jsonb_strip_nulls(jsonb_build_object('invitationId', t.metadata->'invitationId', 'roleKey', t.metadata->'roleKey', 'notSentReason', t.metadata->'notSentReason'))",
      ),
      f.time('createdAt', 't.created_at'),
      f.time('updatedAt', 't.updated_at'),
    ],
  },
  {
    key: 'sessions',
    resource: 'session',
    shape: 'many',
    source: 'table',
    from: 'sessions t',
    // As the organization's admins see them (queries/org-sessions.ts): opened in it, by a member.
    tenantColumn: 't.active_tenant_id',
    where: 'exists (select 1 from memberships m where m.tenant_id = t.active_tenant_id and m.user_id = t.user_id)',
    asOfColumn: 't.created_at',
    orderBy: 't.created_at, t.id',
    fields: [
      f.text('id', 't.id'),
      f.text('userId', 't.user_id'),
      f.text('ipAddress', 't.ip_address'),
      f.text('userAgent', 't.user_agent'),
      f.time('lastSeenAt', 't.last_seen_at'),
      f.time('expiresAt', 't.expires_at'),
      f.time('absoluteExpiresAt', 't.absolute_expires_at'),
      f.time('revokedAt', 't.revoked_at'),
      f.time('createdAt', 't.created_at'),
    ],
  },
  {
    key: 'auditLogs',
    resource: 'audit_log',
    shape: 'many',
    source: 'table',
    from: 'audit_logs t',
    tenantColumn: 't.tenant_id',
    asOfColumn: 't.created_at',
    orderBy: 't.created_at, t.id',
    fields: [
      f.text('id', 't.id'),
      f.text('actorType', 't.actor_type'),
      f.text('actorId', 't.actor_id'),
      f.text('actorLabel', 't.actor_label'),
      f.text('action', 't.action'),
      f.text('targetType', 't.target_type'),
      f.text('targetId', 't.target_id'),
      f.text('ipAddress', 't.ip_address'),
      f.text('userAgent', 't.user_agent'),
      f.text('requestId', 't.request_id'),
      // Redacted when written (apps/api modules/access/audit.ts).
      f.json('summary', 't.summary'),
      f.time('createdAt', 't.created_at'),
    ],
  },
  {
    key: 'webhookEvents',
    resource: 'webhook_event',
    shape: 'many',
    source: 'table',
    from: 'webhook_events t',
    tenantColumn: 't.tenant_id',
    asOfColumn: 't.created_at',
    orderBy: 't.created_at, t.id',
    fields: [f.text('id', 't.id'), f.text('type', 't.type'), f.json('data', 't.data'), f.time('createdAt', 't.created_at')],
  },
  {
    key: 'webhookDeliveries',
    resource: 'webhook_delivery',
    shape: 'many',
    source: 'table',
    from: 'webhook_deliveries t',
    tenantColumn: 't.tenant_id',
    asOfColumn: 't.created_at',
    orderBy: 't.created_at, t.id',
    fields: [
      f.text('id', 't.id'),
      f.text('endpointId', 't.endpoint_id'),
      f.text('eventId', 't.event_id'),
      f.text('eventType', 't.event_type'),
      f.text('status', 't.status'),
      f.number('attemptCount', 't.attempt_count'),
      f.time('nextAttemptAt', 't.next_attempt_at'),
      f.time('lastAttemptAt', 't.last_attempt_at'),
      f.number('lastStatusCode', 't.last_status_code'),
      f.text('lastOutcome', 't.last_outcome'),
      f.time('succeededAt', 't.succeeded_at'),
      f.time('createdAt', 't.created_at'),
      f.time('updatedAt', 't.updated_at'),
    ],
  },
  {
    key: 'billingSyncLogs',
    resource: 'billing_sync_log',
    shape: 'many',
    source: 'table',
    from: 'billing_sync_logs t',
    tenantColumn: 't.tenant_id',
    asOfColumn: 't.created_at',
    orderBy: 't.created_at, t.id',
    fields: [
      f.text('id', 't.id'),
      f.text('provider', 't.provider'),
      f.text('mappingId', 't.mapping_id'),
      f.text('usageEventId', 't.usage_event_id'),
      f.text('status', 't.status'),
      f.number('attempts', 't.attempts'),
      f.text('providerRecordId', 't.provider_record_id'),
      f.time('createdAt', 't.created_at'),
      f.time('updatedAt', 't.updated_at'),
    ],
  },
  {
    key: 'usageHourly',
    resource: 'usage_hourly',
    shape: 'many',
    source: 'table',
    from: 'usage_hourly t',
    tenantColumn: 't.tenant_id',
    asOfColumn: 't.hour',
    orderBy: 't.event_type, t.hour',
    fields: [
      f.text('eventType', 't.event_type'),
      f.time('hour', 't.hour'),
      f.number('events', 't.events'),
      f.number('quantity', 't.quantity'),
    ],
  },
  {
    key: 'usageEvents',
    resource: 'usage_event',
    shape: 'many',
    source: 'table',
    from: 'usage_events t',
    tenantColumn: 't.tenant_id',
    asOfColumn: 't.created_at',
    orderBy: 't.created_at, t.id',
    fields: [
      f.text('id', 't.id'),
      f.text('idempotencyKey', 't.idempotency_key'),
      f.text('eventType', 't.event_type'),
      f.number('quantity', 't.quantity'),
      f.time('occurredAt', 't.occurred_at'),
      f.json('properties', 't.properties'),
      f.text('sourceId', 't.source_id'),
      f.text('channel', 't.channel'),
      f.time('createdAt', 't.created_at'),
    ],
  },
];

/** `json_build_object('name', <expr>, ...)`: one row as one JSON object, in field order. */
function jsonObjectSql(section: ExportSection): string {
  return `json_build_object(${section.fields.map((field) => `'${field.name}', ${field.sql}`).join(', ')})`;
}

/** A section's rows as of the snapshot: the tenant predicate first, always. */
function whereSql(section: ExportSection, tenantId: string, asOf: SQL | undefined): SQL {
  return and(
    sql`${sql.raw(section.tenantColumn)} = ${tenantId}`,
    asOf && section.asOfColumn ? sql`${sql.raw(section.asOfColumn)} <= ${asOf}` : undefined,
    section.where ? sql.raw(section.where) : undefined,
  ) as SQL;
}

/** A `snapshot` section as a JSON array (an empty one when nothing matches). */
function captureSql(section: ExportSection, tenantId: string): SQL {
  return sql`(select coalesce(json_agg(${sql.raw(jsonObjectSql(section))} order by ${sql.raw(section.orderBy)}), '[]'::json)
    from ${sql.raw(section.from)} where ${whereSql(section, tenantId, undefined)})`;
}

function countSql(section: ExportSection, tenantId: string, asOf: SQL): SQL {
  return sql`(select count(*) from ${sql.raw(section.from)} where ${whereSql(section, tenantId, asOf)})`;
}

// ---------------------------------------------------------------------------------------------
// The record

export async function insertExport(
  db: DbOrTx,
  values: { id: string; tenantId: string; format: 'json' | 'csv'; requestedBy: string | null },
): Promise<ExportRecordRow> {
  const [row] = await db.insert(exportSnapshots).values(values).returning(recordColumns);
  if (!row) {
    throw new Error('export insert returned nothing');
  }
  return row;
}

const recordColumns = {
  id: exportSnapshots.id,
  tenantId: exportSnapshots.tenantId,
  format: exportSnapshots.format,
  status: exportSnapshots.status,
  asOf: exportSnapshots.asOf,
  counts: exportSnapshots.counts,
  error: exportSnapshots.error,
  createdAt: exportSnapshots.createdAt,
  startedAt: exportSnapshots.startedAt,
  completedAt: exportSnapshots.completedAt,
};

/**
 * The organization an export belongs to, by an id from the request: the one read without a
 * tenant predicate, because it is how the tenant is learnt (the caller is authorized against it
 * before anything else is read).
 */
export async function findExportTenant(db: DbOrTx, opts: { untrustedId: string }): Promise<string | undefined> {
  const [row] = await db
    .select({ tenantId: exportSnapshots.tenantId })
    .from(exportSnapshots)
    .where(eq(exportSnapshots.id, opts.untrustedId))
    .limit(1);
  return row?.tenantId;
}

export async function findExport(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<ExportRecordRow | undefined> {
  const [row] = await db
    .select(recordColumns)
    .from(exportSnapshots)
    .where(and(eq(exportSnapshots.tenantId, opts.tenantId), eq(exportSnapshots.id, opts.id)))
    .limit(1);
  return row;
}

/** The record with its captured sections, for a download. */
export async function findExportWithSnapshot(
  db: DbOrTx,
  opts: { tenantId: string; id: string },
): Promise<(ExportRecordRow & { snapshot: Record<string, unknown[]> | null }) | undefined> {
  const [row] = await db
    .select({ ...recordColumns, snapshot: exportSnapshots.snapshot })
    .from(exportSnapshots)
    .where(and(eq(exportSnapshots.tenantId, opts.tenantId), eq(exportSnapshots.id, opts.id)))
    .limit(1);
  return row;
}

/** One page of an organization's exports, newest first (`limit + 1` rows: the extra says "more"). */
export async function listExports(db: DbOrTx, opts: { tenantId: string; limit: number; cursor?: Cursor }): Promise<ExportRecordRow[]> {
  return db
    .select(recordColumns)
    .from(exportSnapshots)
    .where(and(eq(exportSnapshots.tenantId, opts.tenantId), afterCursor(exportSnapshots.createdAt, exportSnapshots.id, opts.cursor)))
    .orderBy(sql`${exportSnapshots.createdAt} desc nulls last`, sql`${exportSnapshots.id} desc nulls last`)
    .limit(opts.limit + 1);
}

// ---------------------------------------------------------------------------------------------
// The build (packages/jobs exports:build)

/**
 * Moves a pending export to running (a re-run of the job finds it running and builds again).
 * Undefined when there is nothing to build: completed, failed, or gone with its organization.
 */
export async function startExportBuild(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<ExportRecordRow | undefined> {
  const [row] = await db
    .update(exportSnapshots)
    .set({ status: 'running', startedAt: sql`coalesce(${exportSnapshots.startedAt}, now())` })
    .where(
      and(
        eq(exportSnapshots.tenantId, opts.tenantId),
        eq(exportSnapshots.id, opts.id),
        inArray(exportSnapshots.status, ['pending', 'running']),
      ),
    )
    .returning(recordColumns);
  return row;
}

/**
 * Captures the `snapshot` sections, counts every section as of the snapshot's instant, and marks
 * the export completed, in one statement. Run it in a REPEATABLE READ transaction with the
 * export's row locked (`lockExportForBuild`): the captures and the counts then see one database
 * state. `as_of` is a millisecond before the transaction's start, so the rows this transaction
 * writes next (the audit entry, the event) fall after it: the counts match the download exactly.
 * Undefined when the export is not running (another run finished it first).
 */
export async function completeExportBuild(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<ExportRecordRow | undefined> {
  const asOf = sql`s.as_of`;
  const captured = EXPORT_SECTIONS.filter((s) => s.source === 'snapshot');
  const snapshot = sql.join(
    captured.map((s) => sql`${s.key}::text, ${captureSql(s, opts.tenantId)}`),
    sql`, `,
  );
  const tableCounts = sql.join(
    EXPORT_SECTIONS.filter((s) => s.source === 'table').map((s) => sql`${s.key}::text, ${countSql(s, opts.tenantId, asOf)}`),
    sql`, `,
  );
  const rows = (await db.execute(sql`
    with s as (select (now() - interval '1 millisecond')::timestamptz(3) as as_of),
    c as (select s.as_of, json_build_object(${snapshot})::jsonb as snap, json_build_object(${tableCounts})::jsonb as table_counts from s)
    update export_snapshots e
    set status = 'completed',
        as_of = c.as_of,
        snapshot = c.snap,
        counts = (select coalesce(jsonb_object_agg(k, jsonb_array_length(v)), '{}'::jsonb) from jsonb_each(c.snap) as x(k, v)) || c.table_counts,
        completed_at = clock_timestamp(),
        error = null
    from c
    where e.tenant_id = ${opts.tenantId} and e.id = ${opts.id} and e.status = 'running'
    returning e.id`)) as unknown as { id: string }[];
  if (rows.length === 0) {
    return undefined;
  }
  return findExport(db, opts);
}

/** Locks the export's row for the build's transaction; its status, or undefined when it is gone. */
export async function lockExportForBuild(
  db: DbOrTx,
  opts: { tenantId: string; id: string },
): Promise<ExportRecordRow['status'] | undefined> {
  const [row] = await db
    .select({ status: exportSnapshots.status })
    .from(exportSnapshots)
    .where(and(eq(exportSnapshots.tenantId, opts.tenantId), eq(exportSnapshots.id, opts.id)))
    .for('update');
  return row?.status;
}

/** Marks an unfinished export failed with a safe message (never an internal error text). */
export async function failExportBuild(
  db: DbOrTx,
  opts: { tenantId: string; id: string; error: string },
): Promise<ExportRecordRow | undefined> {
  const [row] = await db
    .update(exportSnapshots)
    .set({ status: 'failed', error: opts.error, completedAt: sql`now()` })
    .where(
      and(
        eq(exportSnapshots.tenantId, opts.tenantId),
        eq(exportSnapshots.id, opts.id),
        inArray(exportSnapshots.status, ['pending', 'running']),
      ),
    )
    .returning(recordColumns);
  return row;
}

// ---------------------------------------------------------------------------------------------
// The download

/** A string as a SQL literal (standard_conforming_strings: only the quote needs doubling). */
function literal(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** A text cell: a formula-leading value gets a leading quote (csvCell's FORMULA_START; tab is chr(9), CR chr(13)). */
function neutralisedSql(text: string): string {
  return `(case when left(${text}, 1) in ('=', '+', '-', '@', chr(9), chr(13)) then '''' || ${text} else ${text} end)`;
}

/**
 * The CSV cell of a field: the rules of the download's csvCell (apps/api exports/serialize.ts)
 * in SQL. Null is empty; text is neutralised; a JSON value is its JSON text, except a JSON
 * string (neutralised text, as csvCell treats a string) and a JSON null (empty); numbers,
 * booleans and ISO times as they are. Quoted when it holds a quote, comma, CR or LF.
 */
function csvCellSql(field: ExportField): string {
  const v = `r."${field.name}"`;
  if (field.kind === 'number' || field.kind === 'boolean' || field.kind === 'time') {
    // Digits, true/false, ISO timestamps: nothing to neutralise or quote.
    return `coalesce(${v}::text, '')`;
  }
  const json = `to_json(${v})`;
  const text =
    field.kind === 'json'
      ? `(case json_typeof(${json}) when 'string' then ${neutralisedSql(`(${json} #>> '{}')`)} when 'null' then '' else ${json}::text end)`
      : neutralisedSql(`${v}::text`);
  return `(case when ${v} is null then '' when ${text} ~ ('[",' || chr(13) || chr(10) || ']') then '"' || replace(${text}, '"', '""') || '"' else ${text} end)`;
}

/**
 * One CSV line per row, CRLF included: `resource`, then each column of `columns` (the file's
 * header, `resource` first): the section's fields where they fall, empty cells elsewhere.
 */
function csvLineSql(section: ExportSection, columns: readonly string[]): string {
  const parts: string[] = [literal(section.resource)];
  let pending = '';
  for (const column of columns.slice(1)) {
    pending += ',';
    const field = section.fields.find((candidate) => candidate.name === column);
    if (field) {
      parts.push(literal(pending), csvCellSql(field));
      pending = '';
    }
  }
  parts.push(`${literal(pending)} || chr(13) || chr(10)`);
  return `concat(${parts.join(', ')})`;
}

/**
 * The `COPY ... TO STDOUT (FORMAT binary)` statement that streams a `table` section as of
 * `asOf`, oldest first, one text value per row: the row as a JSON object, or its CSV line
 * (`columns` is the CSV header). PostgreSQL renders every byte and the download only frames
 * them, so a million rows cost no per-row JavaScript objects (through a cursor they cost
 * hundreds of MB of short-lived garbage in a busy process). Binary, because the text format
 * escapes backslashes (JSON has them) and line ends (quoted CSV cells may hold them).
 *
 * COPY takes no bind parameters, so the organization id and the instant are written as
 * literals: both come from the export record, and are checked for shape here all the same.
 */
/** How COPY writes a table section's rows: one JSON object per row, or one CSV line in these columns. */
export type ExportCopyRow = { format: 'json' } | { format: 'csv'; columns: readonly string[] };

export function exportSectionCopySql(section: ExportSection, opts: { tenantId: string; asOf: Date } & ExportCopyRow): string {
  if (section.source !== 'table' || !section.asOfColumn) {
    throw new Error(`${section.key} is captured in the snapshot, not read from its table`);
  }
  if (section.shape !== 'many') {
    throw new Error(`${section.key}: a table section is a list`);
  }
  if (!/^[a-z]+_[0-9A-Za-z]+$/.test(opts.tenantId)) {
    throw new Error('not an organization id');
  }
  const row = opts.format === 'json' ? 'row_to_json(r)::text' : csvLineSql(section, opts.columns);
  const fields = section.fields.map((field) => `${field.sql} as "${field.name}"`).join(', ');
  return `copy (
    select ${row}
    from ${section.from}
    cross join lateral (select ${fields}) r
    where ${section.tenantColumn} = ${literal(opts.tenantId)}
      and ${section.asOfColumn} <= ${literal(opts.asOf.toISOString())}::timestamptz
      ${section.where ? `and ${section.where}` : ''}
    order by ${section.orderBy}
  ) to stdout with (format binary)`;
}

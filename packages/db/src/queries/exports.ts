import { and, eq, inArray, type SQL, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import type { ExportField, ExportSection } from '../export-section.ts';
import { afterCursor, type Cursor } from '../pagination.ts';
import { exportSnapshots } from '../schema/exports.ts';
import { apiKeysExportSection } from './api-keys.ts';
import { applicationsExportSection } from './applications.ts';
import { auditLogsExportSection } from './audit-logs.ts';
import { billingMappingsExportSection, billingProvidersExportSection, billingSyncLogsExportSection } from './billing.ts';
import { domainsExportSection } from './domains.ts';
import { emailDeliveriesExportSection } from './email-deliveries.ts';
import { invitationsExportSection } from './invitations.ts';
import { sessionsExportSection } from './org-sessions.ts';
import { organizationExportSection } from './organizations.ts';
import { rolesExportSection } from './roles.ts';
import { subscriptionExportSection } from './subscriptions.ts';
import { usageEventsExportSection, usageHourlyExportSection } from './usage.ts';
import { membersExportSection } from './users.ts';
import { webhookDeliveriesExportSection, webhookEndpointsExportSection, webhookEventsExportSection } from './webhooks.ts';

export type ExportRow = typeof exportSnapshots.$inferSelect;
/** The record without its snapshot (which can be large): what reads and lists need. */
export type ExportRecordRow = Omit<ExportRow, 'snapshot' | 'requestedBy'>;

/**
 * The sections of an export, in the export's order (the JSON document's keys, the CSV's rows).
 * Each is declared beside its domain's queries, the allowlist of what that domain exports
 * (export-section.ts); this file holds what is about exports themselves: the export records,
 * the build, and the streaming of a download.
 */
export const EXPORT_SECTIONS: readonly ExportSection[] = [
  organizationExportSection,
  subscriptionExportSection,
  membersExportSection,
  rolesExportSection,
  invitationsExportSection,
  apiKeysExportSection,
  applicationsExportSection,
  webhookEndpointsExportSection,
  domainsExportSection,
  billingProvidersExportSection,
  billingMappingsExportSection,
  emailDeliveriesExportSection,
  sessionsExportSection,
  auditLogsExportSection,
  webhookEventsExportSection,
  webhookDeliveriesExportSection,
  billingSyncLogsExportSection,
  usageHourlyExportSection,
  usageEventsExportSection,
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

import { AppError } from '@svc/contracts/errors';
import type {
  TCreateExportRequest,
  TCreateExportResponse,
  TExport,
  TExportFormat,
  TExportPage,
  TExportRef,
  TListExportsRequest,
} from '@svc/contracts/exports';
import { newId } from '@svc/contracts/ids';
import type { Db } from '@svc/db/client';
import { addJob } from '@svc/db/jobs';
import { decodeCursor, toPage } from '@svc/db/pagination';
import {
  type ExportRecordRow,
  findExport,
  findExportTenant,
  findExportWithSnapshot,
  insertExport,
  listExports as listExportRows,
} from '@svc/db/queries/exports';
import type { OrganizationRow } from '@svc/db/queries/organizations';
import { EXPORT_BUILD_MAX_ATTEMPTS } from '@svc/jobs/tasks/exports-build';
import { type AccessRule, accessOf, type RecordSource, recordIn } from '../access/access-rule.ts';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import type { Access } from '../access/authorize.ts';
import type { Principal } from '../access/principal.ts';

const NOT_FOUND = 'export not found';

/** An export's `{id}` routes find their organization from the export (modules/access/access-rule.ts). */
export const EXPORT_RECORD: RecordSource = { tenantOf: findExportTenant, notFound: NOT_FOUND };

/**
 * Every export route needs `exports.create` and, for a person, the org_admin role: an export is
 * everything the organization owns (members, audit log, usage), more than any one `.read`
 * permission shows. A tenant API key with the `exports.create` scope may call them all. The
 * organization is `organization_slug` (else the caller's own), or the export's for an `{id}`.
 */
export const EXPORTS_ACCESS = { permission: 'exports.create', organization: 'slug', adminOnly: true } as const satisfies AccessRule;
export const EXPORT_ACCESS = { permission: 'exports.create', organization: EXPORT_RECORD, adminOnly: true } as const satisfies AccessRule;

/** The one place an export row becomes an answer: never the snapshot, never who asked. */
export function toExport(row: ExportRecordRow): TExport {
  return {
    id: row.id,
    format: row.format,
    status: row.status,
    counts: row.status === 'completed' ? row.counts : {},
    asOf: row.asOf.toISOString(),
    createdAt: row.createdAt.toISOString(),
    startedAt: row.startedAt?.toISOString() ?? null,
    completedAt: row.completedAt?.toISOString() ?? null,
    error: row.status === 'failed' ? row.error : null,
  };
}

/**
 * POST /v1/export/all: the record (pending) and its build job in one transaction, with the audit
 * entry: the job exists if and only if the export does. 202: the worker builds it.
 */
export async function createExport(
  db: Db,
  { organization, principal }: Access,
  request: RequestMeta,
  input: TCreateExportRequest,
): Promise<TCreateExportResponse> {
  const requestedBy =
    principal.kind === 'user' ? principal.user.id : principal.kind === 'api_key' ? principal.apiKey.id : principal.setupLink.id;
  return db.transaction(async (tx) => {
    const row = await insertExport(tx, { id: newId('export'), tenantId: organization.id, format: input.format, requestedBy });
    await addJob(tx, 'exports:build', { exportId: row.id, tenantId: organization.id }, { maxAttempts: EXPORT_BUILD_MAX_ATTEMPTS });
    await recordAudit(tx, principal, request, {
      tenantId: organization.id,
      action: 'export.created',
      target: { type: 'export', id: row.id },
      summary: { format: row.format },
    });
    return { export: { id: row.id, format: row.format, status: row.status } };
  });
}

/** GET /v1/exports/{id}. */
export async function getExport(db: Db, access: Access, input: TExportRef): Promise<TExport> {
  return toExport(await recordIn(db, access, findExport, input.id, NOT_FOUND));
}

/** GET /v1/exports?organization_slug=: newest first. */
export async function listExports(db: Db, { organization }: Access, input: TListExportsRequest): Promise<TExportPage> {
  const scope = `exports:${organization.id}`;
  const rows = await listExportRows(db, { tenantId: organization.id, limit: input.limit, cursor: decodeCursor(scope, input.cursor) });
  return toPage(scope, rows, input.limit, toExport);
}

/** What a download streams: the record, its captured sections, and in which serialization. */
export type ExportDownload = {
  record: ExportRecordRow;
  organization: OrganizationRow;
  snapshot: Record<string, unknown[]>;
  format: TExportFormat;
};

/**
 * GET /v1/exports/{id}/download, up to the first byte: authorized like every export route (a plain
 * Express route, no procedure: it resolves GET /v1/exports/{id}'s rule itself), then
 * 409 export_not_ready while pending or running and 409 export_failed for a failed one. The
 * snapshot's own format unless `format` asks for the other.
 */
export async function prepareDownload(
  db: Db,
  principal: Principal,
  input: TExportRef & { format?: TExportFormat },
): Promise<ExportDownload> {
  const access = await accessOf(db, principal, EXPORT_ACCESS, input);
  const row = await recordIn(db, access, findExportWithSnapshot, input.id, NOT_FOUND);
  if (row.status === 'failed') {
    throw new AppError('export_failed', `export ${row.id} failed: ${row.error ?? 'create a new export'}`);
  }
  if (row.status !== 'completed' || !row.snapshot) {
    throw new AppError('export_not_ready', `export ${row.id} is ${row.status}: download it once GET /v1/exports/${row.id} says completed`);
  }
  const { snapshot, ...record } = row;
  return { record, organization: access.organization, snapshot, format: input.format ?? row.format };
}

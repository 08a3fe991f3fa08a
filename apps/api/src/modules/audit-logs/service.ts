import {
  isActorEmail,
  parseAuditActionFilter,
  type TAuditLogEntry,
  type TAuditLogPage,
  type TGetAuditLogEntryRequest,
  type TListAuditLogsRequest,
} from '@svc/contracts/audit-logs';
import { AppError } from '@svc/contracts/errors';
import type { Db } from '@svc/db/client';
import { decodeCursor, toPage } from '@svc/db/pagination';
import { type AuditLogFilter, type AuditLogRow, findAuditLog, listAuditLogs as listAuditLogRows } from '@svc/db/queries/audit-logs';
import { findUserIdsByEmail } from '@svc/db/queries/users';
import { type Access, isPlatformAdmin } from '../access/authorize.ts';

export function toAuditLogEntry(row: AuditLogRow): TAuditLogEntry {
  return {
    id: row.id,
    tenantId: row.tenantId,
    actor: { type: row.actorType, id: row.actorId, label: row.actorLabel },
    action: row.action,
    target: { type: row.targetType, id: row.targetId },
    ipAddress: row.ipAddress,
    userAgent: row.userAgent,
    requestId: row.requestId,
    summary: row.summary,
    createdAt: row.createdAt.toISOString(),
  };
}

/**
 * An ISO instant as the millisecond svc stores times at, rounded up when it is finer (Date
 * truncates): `from` and `to` then select exactly the entries the caller's instant does.
 */
export function instantOf(iso: string): Date {
  const at = new Date(iso);
  const fraction = /\.\d{3}(\d+)/.exec(iso)?.[1];
  return fraction !== undefined && /[1-9]/.test(fraction) ? new Date(at.getTime() + 1) : at;
}

/**
 * GET /v1/audit-logs: one page of an organization's log, newest first (audit.read).
 *
 * The organization is `organization_slug`, else the session's active workspace (an API key:
 * its own). Org admins hold audit.read in their organizations, platform admins in all of them.
 * The platform workspace's log, read by a platform admin, also holds the platform-level
 * entries (tenant_id null); nobody else ever sees those. Other organizations' entries never
 * appear: the organization is on every statement. An actor given as an email is the users of
 * that email: an email nobody has is an empty page, never an error (it says nothing about who
 * exists).
 */
export async function listAuditLogs(db: Db, { organization, principal }: Access, input: TListAuditLogsRequest): Promise<TAuditLogPage> {
  // An email as stored (lowercase); ids are case-sensitive and kept as given.
  const actor = input.actor !== undefined && isActorEmail(input.actor) ? { email: input.actor.toLowerCase() } : undefined;
  const actorIds = actor ? await findUserIdsByEmail(db, actor.email) : input.actor !== undefined ? [input.actor] : undefined;
  if (actorIds?.length === 0) {
    return { data: [], nextCursor: null };
  }
  const from = input.from !== undefined ? instantOf(input.from) : undefined;
  const to = input.to !== undefined ? instantOf(input.to) : undefined;
  const filter: AuditLogFilter = {
    tenantId: organization.id,
    includePlatformLevel: organization.kind === 'platform' && isPlatformAdmin(principal),
    ...(input.action !== undefined ? parseAuditActionFilter(input.action) : {}),
    actorIds,
    targetId: input.target,
    from,
    to,
  };
  // The list a cursor belongs to: validated values never contain `|`. `limit` is left out, so
  // a client may change the page size between pages.
  const scope = [
    'audit_logs',
    organization.id,
    filter.includePlatformLevel ? 'platform' : '',
    input.action ?? '',
    actor?.email ?? input.actor ?? '',
    input.target ?? '',
    from?.toISOString() ?? '',
    to?.toISOString() ?? '',
  ].join('|');
  const after = decodeCursor(scope, input.cursor);
  const rows = await listAuditLogRows(db, { filter, after, limit: input.limit + 1 });
  return toPage(scope, rows, input.limit, toAuditLogEntry);
}

/**
 * GET /v1/audit-logs/{id}: one entry of the organization's log (audit.read), the one the list
 * would show; another organization's entry, or a platform-level one read from anywhere but the
 * platform workspace by a platform admin, is 404 like one that does not exist.
 */
export async function getAuditLogEntry(
  db: Db,
  { organization, principal }: Access,
  input: TGetAuditLogEntryRequest,
): Promise<TAuditLogEntry> {
  const row = await findAuditLog(db, {
    tenantId: organization.id,
    includePlatformLevel: organization.kind === 'platform' && isPlatformAdmin(principal),
    id: input.id,
  });
  if (!row) {
    throw new AppError('not_found', `no audit log entry ${input.id} in this organization`);
  }
  return toAuditLogEntry(row);
}

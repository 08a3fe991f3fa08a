import { AppError } from '@svc/contracts/errors';
import type {
  TGetSessionRequest,
  TListSessionsRequest,
  TRevokeSessionRequest,
  TSession,
  TSessionApplication,
  TSessionPage,
} from '@svc/contracts/sessions';
import type { Db } from '@svc/db/client';
import { decodeCursor, toPage } from '@svc/db/pagination';
import { findOrgSession, listOrgSessions, type OrgSessionRow } from '@svc/db/queries/org-sessions';
import { listApplicationsOfSessions, type SessionApplicationRow } from '@svc/db/queries/session-applications';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import type { Access } from '../access/authorize.ts';
import type { Principal } from '../access/principal.ts';
import { endSessions } from '../session-store/end.ts';
import { deviceLabel } from './device.ts';

function statusOf(row: OrgSessionRow, now: Date): TSession['status'] {
  if (row.revokedAt) {
    return 'revoked';
  }
  const t = now.getTime();
  return row.expiresAt.getTime() <= t || row.absoluteExpiresAt.getTime() <= t ? 'expired' : 'active';
}

function toApplication(row: SessionApplicationRow): TSessionApplication {
  return {
    id: row.id,
    name: row.name,
    organizationId: row.organizationId,
    firstSignedInAt: row.firstSignedInAt.toISOString(),
    lastSignedInAt: row.lastSignedInAt.toISOString(),
    endedAt: row.endedAt?.toISOString() ?? null,
  };
}

function toSession(row: OrgSessionRow, principal: Principal, now: Date, applications: SessionApplicationRow[]): TSession {
  return {
    id: row.id,
    user: { id: row.userId, email: row.userEmail, name: row.userName },
    status: statusOf(row, now),
    device: deviceLabel(row.userAgent),
    userAgent: row.userAgent,
    ipAddress: row.ipAddress,
    createdAt: row.createdAt.toISOString(),
    lastSeenAt: row.lastSeenAt.toISOString(),
    // The idle expiry never passes the absolute one.
    expiresAt: new Date(Math.min(row.expiresAt.getTime(), row.absoluteExpiresAt.getTime())).toISOString(),
    revokedAt: row.revokedAt?.toISOString() ?? null,
    current: principal.kind === 'user' && principal.session.id === row.id,
    applications: applications.map(toApplication),
  };
}

/**
 * GET /v1/sessions: sessions active in the organization whose user is a member of it, newest
 * first; live ones only unless `state=all`.
 */
export async function listSessions(
  db: Db,
  { organization, principal }: Access,
  input: TListSessionsRequest,
  now = new Date(),
): Promise<TSessionPage> {
  const scope = JSON.stringify(['sessions', organization.id, input.state, input.user_id ?? null]);
  const after = decodeCursor(scope, input.cursor);
  const rows = await listOrgSessions(db, {
    tenantId: organization.id,
    onlyLive: input.state === 'active',
    ...(input.user_id !== undefined ? { userId: input.user_id } : {}),
    now,
    ...(after ? { after } : {}),
    limit: input.limit + 1,
  });
  const applications = await listApplicationsOfSessions(db, {
    tenantId: organization.id,
    sessionIds: rows.slice(0, input.limit).map((r) => r.id),
  });
  return toPage(scope, rows, input.limit, (row) => toSession(row, principal, now, applications.get(row.id) ?? []));
}

/** GET /v1/sessions/{id}: one session of the organization's members, live or ended; another organization's is 404. */
export async function getSession(
  db: Db,
  { organization, principal }: Access,
  input: TGetSessionRequest,
  now = new Date(),
): Promise<TSession> {
  const found = await findOrgSession(db, { tenantId: organization.id, id: input.id });
  if (!found) {
    throw new AppError('not_found', 'session not found');
  }
  const applications = await listApplicationsOfSessions(db, { tenantId: organization.id, sessionIds: [found.id] });
  return toSession(found, principal, now, applications.get(found.id) ?? []);
}

/**
 * POST /v1/sessions/{id}/revoke: ends a session of the organization. Each API process reads the
 * session row on every request (modules/session-store), so its next request fails everywhere at once.
 * A session of another organization is a 404; revoking a revoked one answers it unchanged (no
 * second audit entry).
 */
export async function revokeSession(
  db: Db,
  { organization, principal }: Access,
  request: RequestMeta,
  input: TRevokeSessionRequest,
): Promise<TSession> {
  const tenantId = organization.id;
  const now = new Date();
  return db.transaction(async (tx) => {
    const found = await findOrgSession(tx, { tenantId, id: input.id });
    if (!found) {
      throw new AppError('not_found', 'session not found');
    }
    const { sessionIds } = await endSessions(tx, { kind: 'revoked', tenantId, sessionId: input.id }, now);
    if (sessionIds.length === 1) {
      await recordAudit(tx, principal, request, {
        tenantId,
        action: 'session.revoked',
        target: { type: 'session', id: input.id },
        summary: { userId: found.userId, email: found.userEmail, device: deviceLabel(found.userAgent) },
      });
    }
    const applications = await listApplicationsOfSessions(tx, { tenantId, sessionIds: [input.id] });
    return toSession(sessionIds.length === 1 ? { ...found, revokedAt: now } : found, principal, now, applications.get(input.id) ?? []);
  });
}

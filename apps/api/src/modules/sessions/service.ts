import { randomFillSync } from 'node:crypto';
import { sha256 } from '@oslojs/crypto/sha2';
import { encodeBase32LowerCaseNoPadding, encodeHexLowerCase } from '@oslojs/encoding';
import { newId } from '@svc/contracts/ids';
import type { DbOrTx } from '@svc/db/client';
import { findSessionByTokenHash, insertSession, revokeSessionById, type SessionWithUser, touchSession } from '@svc/db/queries/sessions';

/** Idle expiry is pushed forward at most this often: a session check writes nothing otherwise. */
export const SESSION_REFRESH_INTERVAL_MS = 60 * 60 * 1000;

export type SessionSettings = { idleMs: number; absoluteMs: number };

/** 160 random bits, base32: the cookie value. Never stored; the table keeps its SHA-256. */
export function generateSessionToken(): string {
  const bytes = new Uint8Array(20);
  randomFillSync(bytes);
  return encodeBase32LowerCaseNoPadding(bytes);
}

export function hashSessionToken(token: string): string {
  return encodeHexLowerCase(sha256(new TextEncoder().encode(token)));
}

/** A new session for a user who just signed in; the raw token goes into the cookie only. */
export async function createSession(
  db: DbOrTx,
  settings: SessionSettings,
  input: { userId: string; activeTenantId: string | null; isPlatformAdmin: boolean; ipAddress?: string; userAgent?: string },
  now = new Date(),
): Promise<{ token: string; session: Awaited<ReturnType<typeof insertSession>> }> {
  const token = generateSessionToken();
  const session = await insertSession(db, {
    id: newId('session'),
    tokenHash: hashSessionToken(token),
    userId: input.userId,
    activeTenantId: input.activeTenantId,
    isPlatformAdmin: input.isPlatformAdmin,
    expiresAt: new Date(now.getTime() + settings.idleMs),
    absoluteExpiresAt: new Date(now.getTime() + settings.absoluteMs),
    lastSeenAt: now,
    ipAddress: input.ipAddress?.slice(0, 64),
    userAgent: input.userAgent?.slice(0, 512),
  });
  return { token, session };
}

/**
 * The live session a cookie token stands for, or null (unknown, revoked, idle or absolutely
 * expired, or its user suspended). One indexed read; a write only when the idle expiry is due to
 * slide (at most once an hour), so authenticated reads cost no write.
 */
export async function validateSessionToken(
  db: DbOrTx,
  settings: SessionSettings,
  token: string,
  now = new Date(),
): Promise<SessionWithUser | null> {
  if (!/^[a-z2-7]{32}$/.test(token)) {
    return null;
  }
  const found = await findSessionByTokenHash(db, hashSessionToken(token));
  if (!found) {
    return null;
  }
  const { session, user } = found;
  const t = now.getTime();
  if (session.revokedAt || user.status !== 'active' || session.expiresAt.getTime() <= t || session.absoluteExpiresAt.getTime() <= t) {
    return null;
  }
  if (t - session.lastSeenAt.getTime() >= SESSION_REFRESH_INTERVAL_MS) {
    const expiresAt = new Date(Math.min(t + settings.idleMs, session.absoluteExpiresAt.getTime()));
    await touchSession(db, { id: session.id, expiresAt, lastSeenAt: now });
    return { session: { ...session, expiresAt, lastSeenAt: now }, user };
  }
  return found;
}

/** Ends a session at once for every API process (each check reads the row). */
export async function revokeSession(db: DbOrTx, sessionId: string, now = new Date()): Promise<boolean> {
  return revokeSessionById(db, { id: sessionId, at: now });
}

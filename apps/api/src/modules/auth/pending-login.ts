import { randomFillSync } from 'node:crypto';
import { encodeBase32LowerCaseNoPadding } from '@oslojs/encoding';
import type { DbOrTx } from '@svc/db/client';
import { consumePendingLogin, insertPendingLogin, type PendingLoginRow } from '@svc/db/queries/pending-logins';
import { hashSessionToken } from '../session-store/service.ts';

/** How long a sign-in may take at the engine before the callback is refused. */
export const PENDING_LOGIN_TTL_MS = 10 * 60 * 1000;

/** Stores the OIDC secrets of a sign-in under a fresh random handle; the handle goes in a cookie. */
export async function createPendingLogin(
  db: DbOrTx,
  input: { state: string; nonce: string; codeVerifier: string; returnTo: string; applicationId: string | null },
  now = new Date(),
): Promise<string> {
  const bytes = new Uint8Array(20);
  randomFillSync(bytes);
  const handle = encodeBase32LowerCaseNoPadding(bytes);
  await insertPendingLogin(db, {
    handleHash: hashSessionToken(handle),
    ...input,
    expiresAt: new Date(now.getTime() + PENDING_LOGIN_TTL_MS),
  });
  return handle;
}

/** The pending sign-in of a handle, consumed (a second call finds nothing); null when expired. */
export async function redeemPendingLogin(db: DbOrTx, handle: string, now = new Date()): Promise<PendingLoginRow | null> {
  if (!/^[a-z2-7]{32}$/.test(handle)) {
    return null;
  }
  const row = await consumePendingLogin(db, hashSessionToken(handle));
  if (!row || row.expiresAt.getTime() <= now.getTime()) {
    return null;
  }
  return row;
}

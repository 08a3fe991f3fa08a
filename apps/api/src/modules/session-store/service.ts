import { createHash, randomFillSync } from 'node:crypto';
import { encodeBase32LowerCaseNoPadding } from '@oslojs/encoding';
import { newId } from '@svc/contracts/ids';
import type { Db, DbOrTx } from '@svc/db/client';
import {
  findEngineIdToken,
  findMembershipsOfUsers,
  findSessionsByTokenHashes,
  insertSession,
  type MembershipsRead,
  type SessionWithUser,
  touchSession,
} from '@svc/db/queries/sessions';
import { engineIdTokenContext } from '@svc/db/schema/sessions';
import type { SecretBox } from '@svc/db/secret-box';
import { sessionsCreated } from '../../metrics.ts';
import { endSessions } from './end.ts';

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
  return createHash('sha256').update(token).digest('hex');
}

/**
 * A new session for a user who just signed in; the raw token goes into the cookie only. The
 * engine's ID token of that sign-in, when given, is kept sealed with the session (for the
 * engine's end-session: docs/engines.md).
 */
export async function createSession(
  db: DbOrTx,
  settings: SessionSettings,
  input: {
    userId: string;
    activeTenantId: string | null;
    isPlatformAdmin: boolean;
    ipAddress?: string;
    userAgent?: string;
    engineIdToken?: { value: string; secretBox: SecretBox };
  },
  now = new Date(),
): Promise<{ token: string; session: Awaited<ReturnType<typeof insertSession>> }> {
  const token = generateSessionToken();
  const id = newId('session');
  const session = await insertSession(db, {
    id,
    tokenHash: hashSessionToken(token),
    userId: input.userId,
    activeTenantId: input.activeTenantId,
    isPlatformAdmin: input.isPlatformAdmin,
    expiresAt: new Date(now.getTime() + settings.idleMs),
    absoluteExpiresAt: new Date(now.getTime() + settings.absoluteMs),
    lastSeenAt: now,
    ipAddress: input.ipAddress?.slice(0, 64),
    userAgent: input.userAgent?.slice(0, 512),
    engineIdToken: input.engineIdToken ? input.engineIdToken.secretBox.seal(input.engineIdToken.value, engineIdTokenContext(id)) : null,
  });
  sessionsCreated.inc();
  return { token, session };
}

/**
 * The engine's ID token of a session, opened, for the engine's end-session (`id_token_hint`).
 * Undefined when the session has none (opened before svc kept it, or already revoked) or when it
 * does not open under this key and session: the engine's end-session then goes without the hint.
 * Never log the answer.
 */
export async function engineIdTokenOf(db: DbOrTx, secretBox: SecretBox, sessionId: string): Promise<string | undefined> {
  const sealed = await findEngineIdToken(db, sessionId);
  if (!sealed) {
    return undefined;
  }
  try {
    return secretBox.open(sealed, engineIdTokenContext(sessionId));
  } catch {
    return undefined;
  }
}

/** Memberships per user, kept while users.memberships_version says they are current. */
export class MembershipCache {
  #entries = new Map<string, MembershipsRead>();

  constructor(private readonly capacity = 50_000) {}

  get(userId: string, version: number): MembershipsRead | undefined {
    const entry = this.#entries.get(userId);
    return entry && entry.version >= version ? entry : undefined;
  }

  set(userId: string, entry: MembershipsRead): void {
    const existing = this.#entries.get(userId);
    if (existing && existing.version > entry.version) {
      // Two reads finishing out of order: keep the newer memberships.
      return;
    }
    if (this.#entries.size >= this.capacity && !this.#entries.has(userId)) {
      // Oldest inserted first out: a cold entry costs one extra read, never a wrong answer.
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) {
        this.#entries.delete(oldest);
      }
    }
    this.#entries.set(userId, entry);
  }
}

/**
 * Sessions by token hash with their users' memberships: one indexed read, plus a second only for
 * users whose memberships changed (or are not cached here) since this process last read them.
 * The version comes from the same row read as the session, so a membership change committed
 * anywhere is seen by the next check on every process.
 */
async function readSessions(db: Db, tokenHashes: string[], cache?: MembershipCache): Promise<Map<string, SessionWithUser>> {
  const reads = await findSessionsByTokenHashes(db.$client, tokenHashes);
  const missing = new Set<string>();
  for (const read of reads.values()) {
    if (!cache?.get(read.user.id, read.membershipsVersion)) {
      missing.add(read.user.id);
    }
  }
  const fetched = missing.size > 0 ? await findMembershipsOfUsers(db.$client, [...missing]) : undefined;
  const out = new Map<string, SessionWithUser>();
  for (const [hash, { membershipsVersion, ...read }] of reads) {
    let entry = cache?.get(read.user.id, membershipsVersion);
    if (!entry) {
      entry = fetched?.get(read.user.id);
      if (entry) {
        cache?.set(read.user.id, entry);
      }
    }
    out.set(hash, { ...read, memberships: entry?.memberships ?? [], pendingMemberships: entry?.pendingMemberships ?? [] });
  }
  return out;
}

/** Finds sessions by token hash; the default reads one at a time, a SessionLookup batches. */
export type FindSession = (tokenHash: string) => Promise<SessionWithUser | undefined>;

/**
 * The live session a cookie token stands for, or null (unknown, revoked, idle or absolutely
 * expired, or its user suspended). One indexed read; a write only when the idle expiry is due to
 * slide (at most once an hour), so authenticated reads cost no write.
 */
export async function validateSessionToken(
  db: Db,
  settings: SessionSettings,
  token: string,
  now = new Date(),
  find: FindSession = async (hash) => (await readSessions(db, [hash])).get(hash),
): Promise<SessionWithUser | null> {
  if (!/^[a-z2-7]{32}$/.test(token)) {
    return null;
  }
  const found = await find(hashSessionToken(token));
  if (!found) {
    return null;
  }
  const { session } = found;
  const t = now.getTime();
  if (session.revokedAt || found.user.status !== 'active' || session.expiresAt.getTime() <= t || session.absoluteExpiresAt.getTime() <= t) {
    return null;
  }
  if (t - session.lastSeenAt.getTime() >= SESSION_REFRESH_INTERVAL_MS) {
    const expiresAt = new Date(Math.min(t + settings.idleMs, session.absoluteExpiresAt.getTime()));
    await touchSession(db, { id: session.id, expiresAt, lastSeenAt: now });
    return { ...found, session: { ...session, expiresAt, lastSeenAt: now } };
  }
  return found;
}

/** Most token hashes one batched read carries. */
const MAX_BATCH = 100;
/**
 * Reads one process keeps in flight; checks arriving meanwhile wait for the next batch. One
 * measured best: fewer, larger reads cost less than overlapping ones (`pnpm bench`, scenario me).
 */
const MAX_IN_FLIGHT = 1;

type Waiter = { resolve: (found: SessionWithUser | undefined) => void; reject: (error: unknown) => void };

/**
 * Session reads of one process, batched: checks share one indexed read (`token_hash = any(...)`)
 * instead of a round trip each. At most MAX_IN_FLIGHT reads run at once; the checks that arrive
 * while they do are gathered into the next one, so the busier the process, the bigger and fewer
 * the reads. Every check is answered by a read that started after its request arrived, so a
 * revocation committed by any process is seen by the next request everywhere; nothing is cached.
 */
export class SessionLookup {
  #queue = new Map<string, Waiter[]>();
  #scheduled = false;
  #inFlight = 0;
  readonly #memberships = new MembershipCache();

  constructor(
    private readonly db: Db,
    private readonly settings: SessionSettings,
  ) {}

  /** See validateSessionToken. */
  validate(token: string, now = new Date()): Promise<SessionWithUser | null> {
    return validateSessionToken(this.db, this.settings, token, now, this.find);
  }

  readonly find: FindSession = (tokenHash) =>
    new Promise((resolve, reject) => {
      const waiting = this.#queue.get(tokenHash);
      if (waiting) {
        waiting.push({ resolve, reject });
      } else {
        this.#queue.set(tokenHash, [{ resolve, reject }]);
      }
      if (!this.#scheduled && this.#inFlight < MAX_IN_FLIGHT) {
        // The next turn of the event loop: checks of requests read in this one join the batch.
        this.#scheduled = true;
        setImmediate(this.#flush);
      }
    });

  #flush = (): void => {
    this.#scheduled = false;
    while (this.#queue.size > 0 && this.#inFlight < MAX_IN_FLIGHT) {
      const batch = new Map<string, Waiter[]>();
      for (const [hash, waiters] of this.#queue) {
        if (batch.size === MAX_BATCH) {
          break;
        }
        batch.set(hash, waiters);
        this.#queue.delete(hash);
      }
      this.#inFlight++;
      readSessions(this.db, [...batch.keys()], this.#memberships)
        .then(
          (found) => {
            for (const [hash, waiters] of batch) {
              for (const waiter of waiters) {
                waiter.resolve(found.get(hash));
              }
            }
          },
          (error: unknown) => {
            for (const waiters of batch.values()) {
              for (const waiter of waiters) {
                waiter.reject(error);
              }
            }
          },
        )
        .finally(() => {
          this.#inFlight--;
          this.#flush();
        });
    }
  };
}

/**
 * The person signed out: ends the session at once for every API process (each check reads the
 * row), and with it every application it signed in to (endSessions: refresh refused, back-channel
 * logout queued). True when it was live.
 */
export async function revokeSession(db: DbOrTx, sessionId: string, now = new Date()): Promise<boolean> {
  const { sessionIds } = await endSessions(db, { kind: 'signed_out', sessionId }, now);
  return sessionIds.length === 1;
}

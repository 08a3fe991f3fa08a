import type { IncomingMessage } from 'node:http';
import { AppError } from '@svc/contracts/errors';
import { SECRET_KEY_PATTERN } from '@svc/contracts/keys';
import type { Permission } from '@svc/contracts/permissions';
import type { DbOrTx } from '@svc/db/client';
import {
  type ApiKeyRow,
  prepareFindApiKeyBySecretHash,
  prepareFindApiKeyCreatorStanding,
  recordApiKeysUsed,
} from '@svc/db/queries/api-keys';
import type { SessionWithUser } from '@svc/db/queries/sessions';
import type { AppServices } from '../../context.ts';
import { parseBearer, sha256Hex } from '../applications/keys.ts';
import { sessionOf } from '../auth/current-session.ts';
import { type CreatorAccess, creatorAccessOf } from './authorize.ts';

/** A signed-in browser: the session, its user and the user's memberships. */
export type UserPrincipal = { kind: 'user' } & SessionWithUser;

/**
 * A backend service holding a tenant API key: one organization, the key's scopes, bounded by
 * what the key's creator may do there now (`creator`, read with the key on every request).
 */
export type ApiKeyPrincipal = {
  kind: 'api_key';
  apiKey: { id: string; tenantId: string; name: string; scopes: Permission[]; createdByUserId: string };
  creator: CreatorAccess;
};

/** Who is calling a control-plane route. */
export type Principal = UserPrincipal | ApiKeyPrincipal;

/**
 * Keeps tenant API keys' last-used times without a write per request: uses are noted in memory
 * and written in one statement per interval (and at shutdown).
 */
export class ApiKeyUsage {
  #pending = new Map<string, Date>();
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: DbOrTx,
    private readonly intervalMs = 60_000,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  note(keyId: string, at = new Date()): void {
    this.#pending.set(keyId, at);
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      this.flush().catch(this.onError);
    }, this.intervalMs).unref();
  }

  async flush(): Promise<void> {
    const batch = this.#pending;
    this.#pending = new Map();
    await recordApiKeysUsed(this.db, batch);
  }

  async close(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.flush();
  }
}

const finders = new WeakMap<object, ReturnType<typeof prepareFindApiKeyBySecretHash>>();
const creatorFinders = new WeakMap<object, ReturnType<typeof prepareFindApiKeyCreatorStanding>>();

/**
 * What a key's creator may do in the key's organization now: one indexed read per request, like
 * the key itself, so a demotion, a suspension or a removal bounds the key from its next request
 * on every process. Null when the key is void: no creator (deleted: the key was created by
 * someone who no longer exists), a suspended creator, or one who is neither a member of the
 * organization nor a platform admin.
 */
async function creatorAccessOfKey(services: AppServices, key: ApiKeyRow): Promise<CreatorAccess | null> {
  if (!key.createdByUserId) {
    return null;
  }
  let find = creatorFinders.get(services.db);
  if (!find) {
    find = prepareFindApiKeyCreatorStanding(services.db);
    creatorFinders.set(services.db, find);
  }
  const standing = await find({ userId: key.createdByUserId, tenantId: key.tenantId });
  return standing ? creatorAccessOf(standing) : null;
}
const requestReads = new WeakMap<IncomingMessage, { secretHash: string; row: Promise<ApiKeyRow | undefined> }>();

/**
 * The tenant API key row whose secret hashes to `secretHash`, read from the database once per
 * request: the edge's rate limiter (which charges a known key's own budget) and authentication
 * share that one read. Nothing is kept across requests, so a revocation or rotation is seen by
 * the very next request on every process.
 */
export function readApiKeyForRequest(
  services: AppServices,
  req: IncomingMessage | undefined,
  secretHash: string,
): Promise<ApiKeyRow | undefined> {
  const done = req ? requestReads.get(req) : undefined;
  if (done && done.secretHash === secretHash) {
    return done.row;
  }
  let find = finders.get(services.db);
  if (!find) {
    find = prepareFindApiKeyBySecretHash(services.db);
    finders.set(services.db, find);
  }
  const row = find(secretHash);
  if (req) {
    requestReads.set(req, { secretHash, row });
  }
  return row;
}

/** Neither revoked nor expired at `now`. */
export function isLiveApiKey(key: Pick<ApiKeyRow, 'revokedAt' | 'expiresAt'>, now = new Date()): boolean {
  return !key.revokedAt && !(key.expiresAt && key.expiresAt.getTime() <= now.getTime());
}

/** The live tenant API key behind a bearer secret; 401 for an unknown, revoked or expired one. */
export async function apiKeyPrincipal(
  services: AppServices,
  token: string,
  now = new Date(),
  req?: IncomingMessage,
): Promise<ApiKeyPrincipal> {
  if (!SECRET_KEY_PATTERN.test(token)) {
    throw new AppError('invalid_secret_key', 'the API key is malformed (expected Authorization: Bearer sk_live_...)');
  }
  const key = await readApiKeyForRequest(services, req, sha256Hex(token));
  if (!key) {
    const application = await services.applications.bySecretKeyHash(sha256Hex(token));
    if (application) {
      throw new AppError('forbidden', 'an application secret key only calls backend routes; use a tenant API key here');
    }
    throw new AppError('invalid_secret_key', 'no live API key has this secret');
  }
  if (!isLiveApiKey(key, now)) {
    throw new AppError('invalid_secret_key', key.revokedAt ? 'this API key was revoked' : 'this API key has expired');
  }
  const creator = await creatorAccessOfKey(services, key);
  if (!creator || !key.createdByUserId) {
    throw new AppError(
      'invalid_secret_key',
      'this API key is void: the person who created it is no longer an active member of its organization; create a new key',
    );
  }
  services.apiKeyUsage.note(key.id, now);
  return {
    kind: 'api_key',
    apiKey: {
      id: key.id,
      tenantId: key.tenantId,
      name: key.name,
      scopes: key.scopes as Permission[],
      createdByUserId: key.createdByUserId,
    },
    creator,
  };
}

/**
 * The caller of a control-plane route: a bearer API key when an Authorization header is sent
 * (a bad one is refused, never ignored in favour of a cookie), else the session cookie. Null for
 * an anonymous request.
 */
export async function principalOf(services: AppServices, req: IncomingMessage): Promise<Principal | null> {
  const authorization = req.headers.authorization;
  if (authorization !== undefined) {
    const token = parseBearer(authorization);
    if (!token) {
      throw new AppError('invalid_secret_key', 'send the API key as Authorization: Bearer sk_live_...');
    }
    return apiKeyPrincipal(services, token, new Date(), req);
  }
  const current = await sessionOf(services, req);
  return current ? { kind: 'user', ...current } : null;
}

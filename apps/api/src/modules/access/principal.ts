import type { IncomingMessage } from 'node:http';
import { AppError } from '@svc/contracts/errors';
import { SECRET_KEY_PATTERN } from '@svc/contracts/keys';
import type { Permission } from '@svc/contracts/permissions';
import type { Db } from '@svc/db/client';
import { type ApiKeyCredential, prepareFindApiKeyBySecretHash, prepareFindApiKeyCreatorStanding } from '@svc/db/queries/api-keys';
import type { Config } from '../../env.ts';
import type { ApplicationCache } from '../applications/cache.ts';
import { parseBearer, sha256Hex } from '../applications/keys.ts';
import { sessionOf } from '../auth/current-session.ts';
import type { SessionLookup } from '../session-store/service.ts';
import type { ApiKeyUsage } from './api-key-usage.ts';
import { type ApiKeyPrincipal, type CreatorAccess, creatorAccessOf, type Principal } from './authorize.ts';

// The caller's kinds are declared beside the rules that judge them (authorize.ts).
export type { ApiKeyPrincipal, Principal, UserPrincipal } from './authorize.ts';

/**
 * What finding a request's principal uses of the process's services (AppServices has them all;
 * named here so that this module does not depend on the services container, which names it).
 */
export type PrincipalServices = {
  db: Db;
  config: Pick<Config, 'publicUrl'>;
  sessions: SessionLookup;
  applications: ApplicationCache;
  apiKeyUsage: ApiKeyUsage;
};

const finders = new WeakMap<object, ReturnType<typeof prepareFindApiKeyBySecretHash>>();
const creatorFinders = new WeakMap<object, ReturnType<typeof prepareFindApiKeyCreatorStanding>>();

/**
 * What a key's creator may do in the key's organization now: one indexed read per request, like
 * the key itself, so a demotion, a suspension or a removal bounds the key from its next request
 * on every process. Null when the key is void: no creator (deleted: the key was created by
 * someone who no longer exists), a suspended creator, or one who is neither a member of the
 * organization nor a platform admin.
 */
async function creatorAccessOfKey(services: PrincipalServices, key: ApiKeyCredential): Promise<CreatorAccess | null> {
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
const requestReads = new WeakMap<IncomingMessage, { token: string; row: Promise<ApiKeyCredential | undefined> }>();

/**
 * The tenant API key row whose secret is `token` (looked up by its SHA-256), read from the
 * database and hashed once per request: the edge's rate limiter (which charges a known key's own
 * budget) and authentication share that one read. Nothing is kept across requests, so a
 * revocation or rotation is seen by the very next request on every process.
 */
export function readApiKeyForRequest(
  services: PrincipalServices,
  req: IncomingMessage | undefined,
  token: string,
): Promise<ApiKeyCredential | undefined> {
  const done = req ? requestReads.get(req) : undefined;
  if (done && done.token === token) {
    return done.row;
  }
  let find = finders.get(services.db);
  if (!find) {
    find = prepareFindApiKeyBySecretHash(services.db);
    finders.set(services.db, find);
  }
  const row = find(sha256Hex(token));
  if (req) {
    requestReads.set(req, { token, row });
  }
  return row;
}

/** Neither revoked nor expired at `now`. */
export function isLiveApiKey(key: Pick<ApiKeyCredential, 'revokedAt' | 'expiresAt'>, now = new Date()): boolean {
  return !key.revokedAt && !(key.expiresAt && key.expiresAt.getTime() <= now.getTime());
}

/** The live tenant API key behind a bearer secret; 401 for an unknown, revoked or expired one. */
export async function apiKeyPrincipal(
  services: PrincipalServices,
  token: string,
  now = new Date(),
  req?: IncomingMessage,
): Promise<ApiKeyPrincipal> {
  if (!SECRET_KEY_PATTERN.test(token)) {
    throw new AppError('invalid_secret_key', 'the API key is malformed (expected Authorization: Bearer sk_live_...)');
  }
  const key = await readApiKeyForRequest(services, req, token);
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

/** Callers already established for a request by other means than its headers (actAs). */
const actingAs = new WeakMap<IncomingMessage, Principal>();

/**
 * Makes `principal` the caller of the procedures run for `req`: svc's MCP server runs each tool's
 * procedure as the agent its verified token stands for (modules/mcp/agent.ts), so that the
 * procedure's own `authorize` judges it like any caller.
 */
export function actAs(req: IncomingMessage, principal: Principal): void {
  actingAs.set(req, principal);
}

/**
 * The caller of a control-plane route: a bearer API key when an Authorization header is sent
 * (a bad one is refused, never ignored in favour of a cookie), else the session cookie. Null for
 * an anonymous request.
 */
export function principalOf(services: PrincipalServices, req: IncomingMessage): Promise<Principal | null> {
  const established = actingAs.get(req);
  if (established) {
    return Promise.resolve(established);
  }
  const authorization = req.headers.authorization;
  if (authorization !== undefined) {
    const token = parseBearer(authorization);
    if (!token) {
      return Promise.reject(new AppError('invalid_secret_key', 'send the API key as Authorization: Bearer sk_live_...'));
    }
    // The key's own promise, not one more around it: this runs on every API key request.
    return apiKeyPrincipal(services, token, new Date(), req);
  }
  return sessionOf(services, req).then((current) => (current ? { kind: 'user', ...current } : null));
}

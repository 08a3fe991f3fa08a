import { AppError } from '@svc/contracts/errors';
import { z } from 'zod';
import type { EngineAdminApi } from '../../env.ts';

/** Largest engine answer read here (one user, or a page of users with one email). */
const MAX_BODY_BYTES = 256 * 1024;

/** Authentik's user serializer, the fields svc reads. */
const ZEngineUser = z.object({
  pk: z.union([z.number(), z.string()]),
  /**
   * Authentik's `uid`: the OIDC `sub` under the provider's default subject mode ("Based on the
   * User's hashed ID"); the dev engine's `uid` is its `sub` too.
   */
  uid: z.string().min(1),
  email: z.string(),
  attributes: z.record(z.string(), z.unknown()).nullish(),
});
type EngineUser = z.infer<typeof ZEngineUser>;

const ZEngineUserList = z.object({ results: z.array(ZEngineUser) });

/** The engine account of a pre-provisioned user. */
export type ProvisionedIdentity = {
  /** The account's subject (Authentik `uid`). */
  subject: string;
  /**
   * svc may link the user to `subject` now. Otherwise only a sign-in with an email the engine
   * marks verified links the user.
   */
  trusted: boolean;
  /** The engine account was created by this call (false: it existed). */
  created: boolean;
};

/**
 * Makes sure the engine has an account for `email` (Authentik `core/users/`): an existing one is
 * reused, else one is created (no password: the person sets one through the engine's recovery
 * flow, which proves they hold the mailbox).
 *
 * Which subject svc may trust: that of an account svc created just now for this email (nobody else
 * holds it yet), or of an existing account whose email the engine says is verified. An existing
 * account with an unverified email is not trusted: anyone can sign up at the engine with someone
 * else's address, and linking it would hand them the organization's membership.
 *
 * Every failure is an AppError (engine_unreachable, engine_timeout, engine_bad_response), thrown
 * before svc writes anything.
 */
export async function provisionEngineUser(admin: EngineAdminApi, input: { email: string; name: string }): Promise<ProvisionedIdentity> {
  const found = ZEngineUserList.safeParse(await call(admin, 'GET', `core/users/?email=${encodeURIComponent(input.email)}`));
  if (!found.success) {
    throw new AppError('engine_bad_response', "the engine's user list has an unexpected shape");
  }
  const existing = found.data.results.find((u) => u.email.toLowerCase() === input.email);
  if (existing) {
    return { subject: existing.uid, trusted: emailVerified(existing), created: false };
  }
  const created = ZEngineUser.safeParse(
    await call(admin, 'POST', 'core/users/', {
      username: input.email,
      email: input.email,
      name: input.name || input.email,
      is_active: true,
    }),
  );
  if (!created.success) {
    throw new AppError('engine_bad_response', "the engine's new user has an unexpected shape");
  }
  return { subject: created.data.uid, trusted: true, created: true };
}

function emailVerified(user: EngineUser): boolean {
  return user.attributes?.email_verified === true;
}

/**
 * One call to the engine's admin API with svc's token, no redirects followed (the token must
 * not travel elsewhere), bounded by `admin.timeoutMs` and MAX_BODY_BYTES. The engine's own text
 * never reaches the caller.
 */
async function call(admin: EngineAdminApi, method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(new URL(path, admin.url), {
      method,
      headers: {
        authorization: `Bearer ${admin.token}`,
        accept: 'application/json',
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
      redirect: 'manual',
      signal: AbortSignal.timeout(admin.timeoutMs),
    });
    text = await readCapped(response);
  } catch (error) {
    if (error instanceof AppError) {
      throw error;
    }
    if ((error as { name?: unknown }).name === 'TimeoutError') {
      throw new AppError('engine_timeout', `the engine admin API did not answer within ${admin.timeoutMs} ms; nothing was created`);
    }
    throw new AppError('engine_unreachable', 'the engine admin API is unreachable; nothing was created');
  }
  if (response.status === 401 || response.status === 403) {
    throw new AppError(
      'engine_bad_response',
      `the engine refused svc's admin token (${response.status}): check ENGINE_ADMIN_TOKEN and its permissions`,
    );
  }
  if (response.status < 200 || response.status >= 300) {
    throw new AppError(
      'engine_bad_response',
      `the engine answered ${response.status} to ${method} ${path.split('?')[0]}; nothing was created`,
    );
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new AppError('engine_bad_response', `the engine answered ${response.status} without a JSON body`);
  }
}

async function readCapped(response: Response): Promise<string> {
  if (!response.body) {
    return '';
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES) {
      throw new AppError('engine_bad_response', `the engine's answer exceeds ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

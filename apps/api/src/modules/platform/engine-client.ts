import type { ErrorCode } from '@svc/contracts/errors';
import type { EngineAdminApi } from '../../env.ts';

/** Largest engine answer relayed (a page of Authentik users at page_size 1000 stays well below). */
export const MAX_ENGINE_BODY_BYTES = 4 * 1024 * 1024;

/** What the engine said, as the proxy relays it. */
export type EngineAnswer =
  /** A 2xx with a JSON body (null for 204), relayed as is. */
  | { ok: true; status: number; body: unknown }
  /**
   * Anything else, as one of our codes. `engineBody` is the engine's own JSON error for statuses
   * relayed as they are (400, 404, ...); `cause` is for the log only.
   */
  | { ok: false; code: ErrorCode; message: string; engineBody?: unknown; cause?: unknown };

/** Engine error statuses relayed as the same status, under our code for it. */
const RELAYED_ERRORS: Readonly<Record<number, ErrorCode>> = {
  400: 'validation_failed',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

/** The codes an engine error answers under (the OpenAPI document lists them for the proxy). */
export const ENGINE_RELAYED_CODES: readonly ErrorCode[] = [...new Set(Object.values(RELAYED_ERRORS))];

const JSON_TYPE = /^application\/(?:[a-z0-9.+-]*\+)?json(?:\s*;|$)/i;

/**
 * GETs `path` (an allowlisted, canonical path relative to the admin API base) with `query` from
 * the engine's admin API. Only svc's bearer token and `Accept` are sent: never a caller's cookie
 * or Authorization. Redirects are not followed (the token must not travel elsewhere); the whole
 * exchange, body included, is bounded by `admin.timeoutMs` and MAX_ENGINE_BODY_BYTES.
 */
export async function callEngineAdminApi(admin: EngineAdminApi, input: { path: string; query: string }): Promise<EngineAnswer> {
  const url = new URL(input.path, admin.url);
  url.search = input.query;
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: 'GET',
      headers: { authorization: `Bearer ${admin.token}`, accept: 'application/json' },
      redirect: 'manual',
      signal: AbortSignal.timeout(admin.timeoutMs),
    });
    const read = await readCapped(response);
    if (read === null) {
      return { ok: false, code: 'engine_bad_response', message: `the engine's answer exceeds ${MAX_ENGINE_BODY_BYTES} bytes` };
    }
    text = read;
  } catch (error) {
    if ((error as { name?: unknown }).name === 'TimeoutError') {
      return {
        ok: false,
        code: 'engine_timeout',
        message: `the engine admin API did not answer within ${admin.timeoutMs} ms`,
        cause: error,
      };
    }
    return { ok: false, code: 'engine_unreachable', message: 'the engine admin API is unreachable', cause: error };
  }

  const { status } = response;
  if (status === 401 || status === 403) {
    // svc's token was refused: a server-side setting to fix, not the caller's credentials.
    return {
      ok: false,
      code: 'engine_bad_response',
      message: `the engine refused svc's admin token (${status}): check ENGINE_ADMIN_TOKEN and its permissions`,
    };
  }
  if (status === 204 && text === '') {
    return { ok: true, status, body: null };
  }
  const json = JSON_TYPE.test(response.headers.get('content-type') ?? '') ? parseJson(text) : undefined;
  if (status >= 200 && status < 300) {
    return json === undefined
      ? { ok: false, code: 'engine_bad_response', message: `the engine answered ${status} without a JSON body` }
      : { ok: true, status, body: json };
  }
  const relayed = RELAYED_ERRORS[status];
  if (relayed) {
    return {
      ok: false,
      code: relayed,
      message: `the engine answered ${status}`,
      ...(json === undefined ? {} : { engineBody: json }),
    };
  }
  // Redirects (not followed), 5xx and the rest: the engine's text stays out of the answer.
  return { ok: false, code: 'engine_bad_response', message: `the engine answered ${status}` };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The body as text, or null when it is larger than MAX_ENGINE_BODY_BYTES (the rest is not read). */
async function readCapped(response: Response): Promise<string | null> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > MAX_ENGINE_BODY_BYTES) {
    await response.body?.cancel().catch(() => {});
    return null;
  }
  if (!response.body) {
    return '';
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.byteLength;
    if (size > MAX_ENGINE_BODY_BYTES) {
      // Leaving the loop early cancels the stream.
      return null;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

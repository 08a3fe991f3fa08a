import { Agent, type Dispatcher, fetch as undiciFetch } from 'undici';
import { AddressNotAllowedError, type AddressPolicy, checkWebhookUrlShape, guardedLookup, hostOf, judgeHost } from './ssrf.ts';

/** Hosts that name this machine itself, whatever DNS says (RFC 6761) or as literals. */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '::1']);

export type GuardedFetchOptions = AddressPolicy & {
  /** The connection deadline; callers bound the whole request with their own signal. */
  connectTimeoutMs: number;
};

/**
 * A `fetch` for GETs svc makes on someone else's say-so (the OpenID Provider's client metadata
 * documents and JWKS URIs), under the webhook sender's address rules (ssrf.ts, docs/architecture.md
 * section 7): the URL's shape and host are judged first (an IP literal or a metadata name never
 * reaches a socket), every address a name resolves to is checked on the connection actually
 * opened (guardedLookup), and redirects are never followed (`redirect: 'manual'` whatever the
 * caller asks: a 3xx is answered as it is). Size and time limits are the caller's.
 *
 * With `allowPrivate` (WEBHOOK_ALLOW_PRIVATE: development and tests) a loopback host is reached
 * too, and its TLS certificate is not verified: loopback traffic never leaves the machine, so a
 * certificate proves nothing there, and no public authority issues one for `localhost`. Every
 * other host is verified as usual.
 */
export function createGuardedFetch(opts: GuardedFetchOptions): (input: string | URL | Request, init?: RequestInit) => Promise<Response> {
  const policy: AddressPolicy = { allowPrivate: opts.allowPrivate };
  const lookup = guardedLookup(policy);
  const verified = new Agent({ connect: { lookup, timeout: opts.connectTimeoutMs } });
  const loopback: Dispatcher | undefined = opts.allowPrivate
    ? new Agent({ connect: { lookup, timeout: opts.connectTimeoutMs, rejectUnauthorized: false } })
    : undefined;
  return async (input, init = {}) => {
    const shape = checkWebhookUrlShape(input instanceof Request ? input.url : String(input));
    if ('problem' in shape) {
      throw new AddressNotAllowedError(shape.problem.message);
    }
    const url = shape.url;
    if (judgeHost(url, policy) === 'refused') {
      throw new AddressNotAllowedError('the URL points at an address svc may not reach');
    }
    const dispatcher = loopback && LOOPBACK_HOSTS.has(hostOf(url).toLowerCase()) ? loopback : verified;
    const response = await undiciFetch(url, {
      method: init.method ?? 'GET',
      // A plain record: the caller's Headers may come from another copy of undici (Node's own).
      headers: Object.fromEntries(new Headers(init.headers).entries()),
      // A form body (an OIDC token request) passes through; svc's GETs have none.
      body: typeof init.body === 'string' || init.body instanceof URLSearchParams ? init.body.toString() : null,
      signal: init.signal ?? null,
      redirect: 'manual',
      dispatcher,
    });
    return response as unknown as Response;
  };
}

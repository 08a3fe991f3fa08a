import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { WebhookAttemptOutcome } from '@svc/db/schema/webhooks';
import { checkWebhookUrlShape, guardedLookup, hostOf, isAddressAllowed } from './ssrf.ts';

/**
 * One webhook POST, bounded in every direction a receiver can push back (ARCHITECTURE.md
 * section 7): only addresses the SSRF rules allow (checked on the address actually connected
 * to), no redirects followed, one deadline for connect + headers + body, and at most
 * MAX_RESPONSE_BYTES of the answer read before the connection is cut, of which only the first
 * EXCERPT_BYTES are kept. Connections are pooled (keep-alive): a busy receiver is not paid a
 * TCP and TLS handshake per delivery.
 *
 * The status line decides the outcome: a 2xx is a success even when the body that follows is
 * huge, endless or slow (Standard Webhooks receivers acknowledge with the status; the body is
 * only read for the excerpt). Such a body is cut off at the cap or the deadline and the socket
 * destroyed, so it costs neither memory nor more time than the deadline. `response_too_large`
 * is therefore never an outcome of this sender.
 */

/** Read at most this much of an answer; past it the connection is destroyed, not drained. */
export const MAX_RESPONSE_BYTES = 64 * 1024;
/** Kept of an answer, as the attempt's excerpt. */
export const EXCERPT_BYTES = 1024;

export type SendOutcome = Exclude<WebhookAttemptOutcome, 'endpoint_disabled' | 'response_too_large'>;

export type SendResult = {
  outcome: SendOutcome;
  /** The receiver's status, when it answered (also on a timeout while its body was arriving). */
  statusCode: number | null;
  durationMs: number;
  /** A short, safe reason for a failure; null on success. */
  error: string | null;
  /** First EXCERPT_BYTES of the answer, sanitized (see sanitizeExcerpt); null when there was none. */
  responseExcerpt: string | null;
};

export type WebhookSender = {
  /**
   * POSTs `body` to `url`; never rejects. `signal` interrupts the attempt (a shutdown that can
   * wait no longer): it ends with outcome `interrupted` unless the status was already received.
   */
  send: (req: { url: string; headers: Record<string, string>; body: string; signal?: AbortSignal }) => Promise<SendResult>;
  /** Closes pooled connections. */
  close: () => void;
};

export type WebhookSenderOptions = {
  /** WEBHOOK_ALLOW_PRIVATE: loopback and private networks allowed (development and tests). */
  allowPrivate: boolean;
  /** The whole attempt: connect, request, status and the body read. */
  timeoutMs: number;
};

const SECRET_SHAPES = /\b(whsec_|sk_live_|sk_test_)[A-Za-z0-9+/=_-]+/g;
// Control characters (C0, DEL, C1) and Unicode line/paragraph separators and bidi controls:
// an excerpt is shown in the console and in logs, where they could forge lines or reorder text.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]+/g;

/** The excerpt as stored: UTF-8 text, control characters collapsed to a space, secret-shaped values masked. */
export function sanitizeExcerpt(bytes: Buffer): string {
  return bytes.subarray(0, EXCERPT_BYTES).toString('utf8').replace(CONTROL, ' ').replace(SECRET_SHAPES, '$1***').trim();
}

function outcomeOfStatus(status: number): SendOutcome {
  if (status >= 200 && status < 300) {
    return 'succeeded';
  }
  if (status === 410) {
    return 'gone';
  }
  if (status >= 300 && status < 400) {
    return 'redirect';
  }
  return 'http_error';
}

function errorOfStatus(status: number): string | null {
  const outcome = outcomeOfStatus(status);
  if (outcome === 'succeeded') {
    return null;
  }
  if (outcome === 'redirect') {
    return `the receiver answered ${status}; redirects are not followed`;
  }
  if (outcome === 'gone') {
    return 'the receiver answered 410 Gone; the endpoint is disabled';
  }
  return `the receiver answered ${status}`;
}

/** A network error as a short reason: its code, never a stack or our request. */
function describeNetworkError(error: NodeJS.ErrnoException): string {
  const code = error.code ?? 'ERROR';
  const reasons: Record<string, string> = {
    ECONNREFUSED: 'connection refused',
    ECONNRESET: 'connection reset by the receiver',
    ENOTFOUND: 'the host does not resolve',
    EAI_AGAIN: 'DNS lookup failed (temporary)',
    EHOSTUNREACH: 'host unreachable',
    ENETUNREACH: 'network unreachable',
    EPIPE: 'connection closed by the receiver while sending',
  };
  return `${reasons[code] ?? 'connection failed'} (${code})`.slice(0, 200);
}

/** Errors on a pooled socket the receiver had closed while it sat idle: worth one fresh try. */
const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE']);

class DeadlineError extends Error {
  override name = 'DeadlineError';
}

/** A send in flight under a signal: a node of its signal's list (below). */
type Interruptible = { interrupt: () => void; prev: Interruptible | null; next: Interruptible | null };

/**
 * The sends in flight under each signal, as an intrusive linked list behind one abort listener
 * per signal (a run's sends share its signal). Joining and leaving only relink a node the send
 * creates anyway: an EventTarget listener per request is slow to add and remove (and Node warns
 * past 10), and a Set that churns through one entry per request measured 12 us of CPU per
 * request more than no registration at all, most of it garbage collection.
 */
const inFlightBySignal = new WeakMap<AbortSignal, { head: Interruptible | null }>();

function joinSignal(signal: AbortSignal, node: Interruptible): void {
  let list = inFlightBySignal.get(signal);
  if (!list) {
    const created: { head: Interruptible | null } = { head: null };
    list = created;
    inFlightBySignal.set(signal, created);
    signal.addEventListener(
      'abort',
      () => {
        // Each interrupt leaves the list: take the next node first.
        for (let n = created.head; n; ) {
          const next: Interruptible | null = n.next;
          n.interrupt();
          n = next;
        }
      },
      { once: true },
    );
  }
  node.next = list.head;
  if (list.head) {
    list.head.prev = node;
  }
  list.head = node;
}

function leaveSignal(signal: AbortSignal, node: Interruptible): void {
  const list = inFlightBySignal.get(signal);
  if (!list) {
    return;
  }
  if (node.prev) {
    node.prev.next = node.next;
  } else if (list.head === node) {
    list.head = node.next;
  }
  if (node.next) {
    node.next.prev = node.prev;
  }
  node.prev = null;
  node.next = null;
}

/** Where a URL sends a request, or why it may not be sent; parsed and checked once per URL. */
type Target = { ok: true; https: boolean; options: http.RequestOptions } | { ok: false; result: Omit<SendResult, 'durationMs'> };

/** Distinct URLs remembered; past this the cache starts over (it only saves parsing). */
const TARGET_CACHE_SIZE = 1_000;

export function createWebhookSender(opts: WebhookSenderOptions): WebhookSender {
  const lookup: LookupFunction = guardedLookup({ allowPrivate: opts.allowPrivate });
  // `lookup` on the agents too: every socket they open, pooled or not, goes through the guard.
  const agentOptions = { keepAlive: true, keepAliveMsecs: 1_000, maxFreeSockets: 64, timeout: 60_000, lookup };
  const httpAgent = new http.Agent(agentOptions);
  const httpsAgent = new https.Agent(agentOptions);
  const targets = new Map<string, Target>();

  function targetOf(raw: string): Target {
    const cached = targets.get(raw);
    if (cached) {
      return cached;
    }
    let target: Target;
    const shape = checkWebhookUrlShape(raw);
    if ('problem' in shape) {
      target = {
        ok: false,
        result: { outcome: 'connection_failed', statusCode: null, error: shape.problem.message, responseExcerpt: null },
      };
    } else {
      const url = shape.url;
      const host = hostOf(url);
      // Node connects to an IP literal without calling `lookup`: check it here.
      if (isIP(host) && !isAddressAllowed(host, { allowPrivate: opts.allowPrivate })) {
        target = {
          ok: false,
          result: {
            outcome: 'address_not_allowed',
            statusCode: null,
            error: 'the URL points at an address webhooks may not reach',
            responseExcerpt: null,
          },
        };
      } else {
        const secure = url.protocol === 'https:';
        target = {
          ok: true,
          https: secure,
          options: {
            method: 'POST',
            protocol: url.protocol,
            hostname: host,
            port: url.port || undefined,
            path: `${url.pathname}${url.search}`,
            agent: secure ? httpsAgent : httpAgent,
            lookup,
          },
        };
      }
    }
    if (targets.size >= TARGET_CACHE_SIZE) {
      targets.clear();
    }
    targets.set(raw, target);
    return target;
  }

  function attempt(
    target: { https: boolean; options: http.RequestOptions },
    headers: Record<string, string>,
    body: string,
    deadline: number,
    started: number,
    signal: AbortSignal | undefined,
    mayRetryStale: boolean,
  ): Promise<SendResult> {
    return new Promise((resolve) => {
      let settled = false;
      let status: number | null = null;
      let received = 0;
      const kept: Buffer[] = [];
      let keptBytes = 0;
      let cutOff = false;

      const excerpt = () => (keptBytes > 0 ? sanitizeExcerpt(Buffer.concat(kept)) : null);
      const finish = (result: Omit<SendResult, 'durationMs'>) => {
        if (settled) {
          return;
        }
        settled = true;
        clearTimeout(timer);
        if (joined) {
          leaveSignal(joined, node);
          joined = null;
        }
        resolve({ ...result, durationMs: Math.round(performance.now() - started) });
      };
      /** The status is known: it decides, whatever happens to the body. */
      const finishWithStatus = (code: number, note?: string) => {
        const error = errorOfStatus(code);
        finish({
          outcome: outcomeOfStatus(code),
          statusCode: code,
          error: error && note ? `${error}; ${note}` : error,
          responseExcerpt: excerpt(),
        });
      };

      const interrupted = () => {
        if (status !== null) {
          finishWithStatus(status, 'response body cut off by shutdown');
        } else {
          finish({ outcome: 'interrupted', statusCode: null, error: 'interrupted by a worker shutdown', responseExcerpt: null });
        }
        req.destroy();
      };

      // This send in the list of its signal's sends while it is in flight.
      const node: Interruptible = { interrupt: interrupted, prev: null, next: null };
      let joined: AbortSignal | null = null;

      const req = (target.https ? https : http).request({
        ...target.options,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      });

      const timer = setTimeout(
        () => {
          if (status !== null) {
            finishWithStatus(status, `response body not finished within ${opts.timeoutMs} ms`);
          } else {
            finish({
              outcome: 'timeout',
              statusCode: null,
              error: `no answer within ${opts.timeoutMs} ms`,
              responseExcerpt: null,
            });
          }
          req.destroy(new DeadlineError('deadline'));
        },
        // Whole milliseconds: Node keeps one timer list per distinct duration, so the usual
        // duration (the full timeout) shares one list instead of creating one per request.
        Math.max(1, Math.round(deadline - performance.now())),
      );
      if (signal?.aborted) {
        queueMicrotask(interrupted);
      } else if (signal) {
        joinSignal(signal, node);
        joined = signal;
      }

      req.on('response', (res) => {
        status = res.statusCode ?? 0;
        const code = status;
        res.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (keptBytes < EXCERPT_BYTES) {
            const part = chunk.subarray(0, EXCERPT_BYTES - keptBytes);
            kept.push(Buffer.from(part));
            keptBytes += part.length;
          }
          if (received > MAX_RESPONSE_BYTES && !cutOff) {
            // Stop reading: a 10 MB (or endless) answer costs one 64 KiB read, not its length.
            cutOff = true;
            finishWithStatus(code, `response body cut off after ${MAX_RESPONSE_BYTES / 1024} KiB`);
            req.destroy();
          }
        });
        res.on('end', () => finishWithStatus(code));
        // A body cut short by the receiver: the status still decides.
        res.on('error', () => finishWithStatus(code, 'response body cut short'));
        res.on('close', () => finishWithStatus(code));
      });

      req.on('error', (error: NodeJS.ErrnoException) => {
        if (settled) {
          return;
        }
        if (status !== null) {
          finishWithStatus(status, 'response body cut short');
          return;
        }
        if (mayRetryStale && req.reusedSocket && error.code && STALE_SOCKET_CODES.has(error.code)) {
          // The pooled connection died while idle: one fresh connection, same deadline.
          settled = true;
          clearTimeout(timer);
          if (joined) {
            leaveSignal(joined, node);
            joined = null;
          }
          resolve(attempt(target, headers, body, deadline, started, signal, false));
          return;
        }
        if (error.code === 'EADDRNOTALLOWED') {
          finish({
            outcome: 'address_not_allowed',
            statusCode: null,
            error: 'the host resolves to an address webhooks may not reach',
            responseExcerpt: null,
          });
          return;
        }
        finish({ outcome: 'connection_failed', statusCode: null, error: describeNetworkError(error), responseExcerpt: null });
      });

      req.end(body);
    });
  }

  return {
    async send({ url, headers, body, signal }) {
      const started = performance.now();
      const target = targetOf(url);
      if (!target.ok) {
        return { ...target.result, durationMs: 0 };
      }
      return attempt(target, headers, body, started + opts.timeoutMs, started, signal, true);
    },
    close() {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}

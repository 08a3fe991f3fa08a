import type { LookupFunction } from 'node:net';
import type { WebhookAttemptOutcome } from '@svc/db/schema/webhooks';
import { Agent, type Dispatcher } from 'undici';
import { checkWebhookUrlShape, guardedLookup, judgeHost } from './ssrf.ts';

/**
 * One webhook POST, bounded in every direction a receiver can push back (docs/architecture.md
 * section 7): only addresses the SSRF rules allow (checked on the address actually connected
 * to), no redirects followed, one deadline for connect + headers + body, and at most
 * MAX_RESPONSE_BYTES of the answer read before the connection is cut, of which only the first
 * EXCERPT_BYTES are kept. Connections are pooled (keep-alive): a busy receiver is not paid a
 * TCP and TLS handshake per delivery.
 *
 * Requests go through undici's dispatcher, not node:http: the dispatcher is the delivery
 * engine's hot path, and undici's HTTP/1.1 client takes about 25 us of CPU per request here
 * where node:http's ClientRequest takes 45 (a probe of both against one receiver, 30,000 POSTs,
 * 32 in flight). Each attempt is one handler object with methods, no closures per request.
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
    UND_ERR_SOCKET: 'connection closed by the receiver before it answered',
  };
  return `${reasons[code] ?? 'connection failed'} (${code})`.slice(0, 200);
}

/** A send in flight under a signal: a node of its signal's list (below). */
type Interruptible = { interrupt(): void; prev: Interruptible | null; next: Interruptible | null };

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

/** Errors of a connection that died under a request before any answer: worth one fresh try. */
const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

/** The network error of an undici failure: undici wraps some (a closed socket) with the cause. */
function networkErrorOf(error: Error): NodeJS.ErrnoException {
  const err = error as NodeJS.ErrnoException & { cause?: unknown };
  if (err.code === 'UND_ERR_SOCKET' && err.cause instanceof Error && (err.cause as NodeJS.ErrnoException).code) {
    return err.cause as NodeJS.ErrnoException;
  }
  return err;
}

/** Where a URL sends a request, or why it may not be sent; parsed and checked once per URL. */
type Target = { ok: true; origin: string; path: string } | { ok: false; result: Omit<SendResult, 'durationMs'> };

/** Distinct URLs remembered; past this the cache starts over (it only saves parsing). */
const TARGET_CACHE_SIZE = 1_000;

const INTERRUPTED_BY_SHUTDOWN = new Error('interrupted by a worker shutdown');
const PAST_DEADLINE = new Error('deadline');
const CUT_OFF = new Error('response cut off');

/**
 * One attempt in flight: undici's handler for the request and a node of its signal's list.
 * `finish` settles it exactly once; whatever undici reports after that is ignored.
 */
class Attempt implements Dispatcher.DispatchHandler, Interruptible {
  prev: Interruptible | null = null;
  next: Interruptible | null = null;
  private settled = false;
  private status: number | null = null;
  private received = 0;
  private kept: Buffer[] | null = null;
  private keptBytes = 0;
  private controller: Dispatcher.DispatchController | null = null;
  private joined: AbortSignal | null = null;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly sender: { dispatcher: Dispatcher; timeoutMs: number },
    private readonly request: Dispatcher.DispatchOptions,
    private readonly started: number,
    deadline: number,
    signal: AbortSignal | undefined,
    private readonly mayRetryStale: boolean,
    private readonly resolve: (result: SendResult | Promise<SendResult>) => void,
  ) {
    // Whole milliseconds: Node keeps one timer list per distinct duration, so the usual duration
    // (the full timeout) shares one list instead of creating one per request.
    this.timer = setTimeout(onDeadline, Math.max(1, Math.round(deadline - performance.now())), this);
    if (signal?.aborted) {
      queueMicrotask(() => this.interrupt());
    } else if (signal) {
      joinSignal(signal, this);
      this.joined = signal;
    }
  }

  start(): void {
    this.sender.dispatcher.dispatch(this.request, this);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.settled) {
      // Decided while waiting for a connection (deadline, shutdown): never send it.
      controller.abort(PAST_DEADLINE);
      return;
    }
    this.controller = controller;
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
    // A 1xx is informational: the final status follows.
    if (statusCode >= 200) {
      this.status = statusCode;
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) {
      return;
    }
    this.received += chunk.length;
    if (this.keptBytes < EXCERPT_BYTES) {
      const part = chunk.subarray(0, EXCERPT_BYTES - this.keptBytes);
      this.kept ??= [];
      this.kept.push(Buffer.from(part));
      this.keptBytes += part.length;
    }
    if (this.received > MAX_RESPONSE_BYTES) {
      // Stop reading: a 10 MB (or endless) answer costs one 64 KiB read, not its length.
      this.finishWithStatus(this.status ?? 0, `response body cut off after ${MAX_RESPONSE_BYTES / 1024} KiB`);
      controller.abort(CUT_OFF);
    }
  }

  onResponseEnd(): void {
    this.finishWithStatus(this.status ?? 0);
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.settled) {
      return;
    }
    if (this.status !== null) {
      // A body cut short by the receiver: the status still decides.
      this.finishWithStatus(this.status, 'response body cut short');
      return;
    }
    const cause = networkErrorOf(error);
    if (this.mayRetryStale && cause.code && STALE_SOCKET_CODES.has(cause.code)) {
      // The connection died before any answer, most often a pooled one the receiver had closed
      // while it sat idle: one fresh try within the same deadline.
      const signal = this.joined ?? undefined;
      this.settle();
      this.resolve(send(this.sender, this.request, this.started, this.started + this.sender.timeoutMs, signal, false));
      return;
    }
    if (cause.code === 'EADDRNOTALLOWED') {
      this.finish({
        outcome: 'address_not_allowed',
        statusCode: null,
        error: 'the host resolves to an address webhooks may not reach',
        responseExcerpt: null,
      });
      return;
    }
    if (cause.code === 'UND_ERR_CONNECT_TIMEOUT') {
      this.finish({
        outcome: 'timeout',
        statusCode: null,
        error: `no connection within ${this.sender.timeoutMs} ms`,
        responseExcerpt: null,
      });
      return;
    }
    this.finish({ outcome: 'connection_failed', statusCode: null, error: describeNetworkError(cause), responseExcerpt: null });
  }

  /** The run's signal fired: a shutdown that can wait no longer. */
  interrupt(): void {
    if (this.status !== null) {
      this.finishWithStatus(this.status, 'response body cut off by shutdown');
    } else {
      this.finish({ outcome: 'interrupted', statusCode: null, error: 'interrupted by a worker shutdown', responseExcerpt: null });
    }
    this.controller?.abort(INTERRUPTED_BY_SHUTDOWN);
  }

  /** The deadline passed: the status decides if it arrived, otherwise a timeout. */
  deadline(): void {
    if (this.status !== null) {
      this.finishWithStatus(this.status, `response body not finished within ${this.sender.timeoutMs} ms`);
    } else {
      this.finish({ outcome: 'timeout', statusCode: null, error: `no answer within ${this.sender.timeoutMs} ms`, responseExcerpt: null });
    }
    this.controller?.abort(PAST_DEADLINE);
  }

  /** The status is known: it decides, whatever happens to the body. */
  private finishWithStatus(code: number, note?: string): void {
    const error = errorOfStatus(code);
    this.finish({
      outcome: outcomeOfStatus(code),
      statusCode: code,
      error: error && note ? `${error}; ${note}` : error,
      responseExcerpt: this.kept ? sanitizeExcerpt(this.kept.length === 1 ? (this.kept[0] as Buffer) : Buffer.concat(this.kept)) : null,
    });
  }

  private finish(result: Omit<SendResult, 'durationMs'>): void {
    if (this.settled) {
      return;
    }
    this.settle();
    this.resolve({
      outcome: result.outcome,
      statusCode: result.statusCode,
      durationMs: Math.round(performance.now() - this.started),
      error: result.error,
      responseExcerpt: result.responseExcerpt,
    });
  }

  /** No more results from this attempt: its timer and its place in the signal's list go. */
  private settle(): void {
    this.settled = true;
    clearTimeout(this.timer);
    if (this.joined) {
      leaveSignal(this.joined, this);
      this.joined = null;
    }
  }
}

function onDeadline(attempt: Attempt): void {
  attempt.deadline();
}

function send(
  sender: { dispatcher: Dispatcher; timeoutMs: number },
  request: Dispatcher.DispatchOptions,
  started: number,
  deadline: number,
  signal: AbortSignal | undefined,
  mayRetryStale: boolean,
): Promise<SendResult> {
  return new Promise((resolve) => {
    new Attempt(sender, request, started, deadline, signal, mayRetryStale, resolve).start();
  });
}

export function createWebhookSender(opts: WebhookSenderOptions): WebhookSender {
  const lookup: LookupFunction = guardedLookup({ allowPrivate: opts.allowPrivate });
  // `lookup` on every connection the dispatcher opens, pooled or not: the SSRF guard sees the
  // address actually connected to. No redirects are followed (undici's dispatch never does).
  const dispatcher = new Agent({
    connect: { lookup, timeout: opts.timeoutMs },
    // The attempt's own deadline bounds headers and body together.
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  const context = { dispatcher, timeoutMs: opts.timeoutMs };
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
      // Node connects to an IP literal without calling `lookup`: check it here, with the names
      // refused whatever they resolve to (metadata services, loopback names).
      if (judgeHost(url, { allowPrivate: opts.allowPrivate }) === 'refused') {
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
        target = { ok: true, origin: url.origin, path: `${url.pathname}${url.search}` };
      }
    }
    if (targets.size >= TARGET_CACHE_SIZE) {
      targets.clear();
    }
    targets.set(raw, target);
    return target;
  }

  return {
    send({ url, headers, body, signal }) {
      const started = performance.now();
      const target = targetOf(url);
      if (!target.ok) {
        return Promise.resolve({ ...target.result, durationMs: 0 });
      }
      const options: Dispatcher.DispatchOptions = {
        origin: target.origin,
        path: target.path,
        method: 'POST',
        headers,
        body,
      };
      return send(context, options, started, started + opts.timeoutMs, signal, true);
    },
    close() {
      void dispatcher.destroy().catch(() => {});
    },
  };
}

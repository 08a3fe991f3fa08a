import pino, { type DestinationStream, type Logger } from 'pino';
import type { Config } from './env.ts';

/**
 * Logging that never writes a secret. Drizzle wraps every failed query in an error whose message
 * is `Failed query: <sql>\nparams: <params>` and which carries `.query` and `.params`; the params
 * are secret-key hashes, rate-limit counter keys, emails. pino's stock `err` serializer copies all
 * of that (and every other enumerable property, such as PostgreSQL's `detail`, which quotes the
 * offending row's values). Ours keeps an allowlist instead: type, a scrubbed message, a few
 * diagnostic codes, the stack frames (re-headed with the scrubbed message) and the cause chain.
 */

/** What a failed query is logged as: the SQL and its parameters stay out of the log. */
export const QUERY_FAILED_MESSAGE = 'database query failed';

export type SerializedError = {
  type: string;
  message: string;
  code?: string | number;
  errno?: number;
  syscall?: string;
  severity?: string;
  status?: number;
  stack?: string;
  cause?: SerializedError;
  errors?: SerializedError[];
};

const MAX_DEPTH = 5;
const MAX_AGGREGATED = 5;

/** Secret shapes svc handles: secret keys, webhook signing secrets, SHA-256 hex hashes. */
const SECRET_PATTERNS: [RegExp, string][] = [
  [/\b(sk_(?:live|test)_)[A-Za-z0-9]+/g, '$1[redacted]'],
  [/\b(whsec_)[A-Za-z0-9+/=_-]+/g, '$1[redacted]'],
  [/\b[0-9a-f]{64}\b/gi, '[redacted]'],
  // PostgreSQL quotes the rejected input: `invalid input syntax for type uuid: "<value>"`.
  [/(invalid input (?:syntax|value) for [^:\n]*: )"[^"\n]*"/g, '$1"[redacted]"'],
  // ... and the conflicting key: `Key (secret_key_hash)=(<value>) already exists.`
  [/(Key \([^)\n]*\)=)\([^\n]*?\)( already exists| is not present| conflicts)/g, '$1([redacted])$2'],
];

/** A Drizzle query failure rendered in text (an error message, a stack, a worker log line). */
const FAILED_QUERY_TEXT = /Failed query: [\s\S]*?(?:\n\s*params: [^\n]*|$)/g;

/** Removes query text, parameters and secret-looking values from free text. */
export function scrubText(text: string): string {
  let out = text;
  if (out.includes('Failed query')) {
    out = out.replace(FAILED_QUERY_TEXT, QUERY_FAILED_MESSAGE);
  }
  // Defensive: nothing after a `params:` label is ever logged (postgres.js messages carry none).
  const params = out.search(/(^|\s)params:/);
  if (params !== -1) {
    out = out.slice(0, params).trimEnd();
  }
  for (const [pattern, replacement] of SECRET_PATTERNS) {
    out = out.replace(pattern, replacement);
  }
  return out;
}

type ErrorLike = {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  errno?: unknown;
  syscall?: unknown;
  severity?: unknown;
  status?: unknown;
  statusCode?: unknown;
  stack?: unknown;
  cause?: unknown;
  errors?: unknown;
  constructor?: { name?: unknown };
};

/** Drizzle's wrapper (`DrizzleQueryError`): its message and props are the SQL and its params. */
function isQueryWrapper(err: ErrorLike): boolean {
  return (typeof err.message === 'string' && err.message.startsWith('Failed query')) || 'params' in err;
}

function typeOf(err: ErrorLike): string {
  const ctor = err.constructor?.name;
  if (typeof ctor === 'string' && ctor !== 'Error' && ctor !== 'Object') {
    return ctor;
  }
  return typeof err.name === 'string' && err.name ? err.name : typeof ctor === 'string' ? ctor : 'Error';
}

/** Stack frames only: the stack's first lines repeat the (unsafe) message. */
function framesOf(stack: unknown): string[] {
  if (typeof stack !== 'string') {
    return [];
  }
  return stack
    .split('\n')
    .filter((line) => /^\s+at /.test(line))
    .map((line) => scrubText(line));
}

function serialize(value: unknown, depth: number, seen: Set<unknown>): SerializedError {
  if (value === null || typeof value !== 'object') {
    return { type: typeof value, message: scrubText(String(value)) };
  }
  if (seen.has(value)) {
    return { type: 'Circular', message: '[circular cause]' };
  }
  seen.add(value);
  const err = value as ErrorLike;
  const type = typeOf(err);
  const queryWrapper = isQueryWrapper(err);
  const message = queryWrapper ? QUERY_FAILED_MESSAGE : scrubText(typeof err.message === 'string' ? err.message : '');
  const out: SerializedError = { type, message };
  if (typeof err.code === 'string' || typeof err.code === 'number') {
    out.code = typeof err.code === 'string' ? scrubText(err.code) : err.code;
  }
  if (typeof err.errno === 'number') {
    out.errno = err.errno;
  }
  if (typeof err.syscall === 'string') {
    out.syscall = err.syscall;
  }
  if (typeof err.severity === 'string') {
    out.severity = err.severity;
  }
  const status = typeof err.status === 'number' ? err.status : typeof err.statusCode === 'number' ? err.statusCode : undefined;
  if (status !== undefined) {
    out.status = status;
  }
  const frames = framesOf(err.stack);
  if (frames.length > 0) {
    out.stack = [`${type}: ${message}`, ...frames].join('\n');
  }
  if (err.cause !== undefined && err.cause !== null) {
    out.cause = depth < MAX_DEPTH ? serialize(err.cause, depth + 1, seen) : { type: 'Truncated', message: '[cause chain too deep]' };
  }
  if (Array.isArray(err.errors) && depth < MAX_DEPTH) {
    out.errors = err.errors.slice(0, MAX_AGGREGATED).map((e) => serialize(e, depth + 1, seen));
  }
  return out;
}

/** pino's `err` serializer: safe to log whatever was thrown. */
export function serializeError(value: unknown): SerializedError {
  return serialize(value, 0, new Set());
}

function headline(e: SerializedError): string {
  return `${e.type}${e.code !== undefined ? ` [${e.code}]` : ''}: ${e.message}`;
}

/**
 * Text for a human (the CLI's unexpected-error path): the scrubbed headline and stack frames, then
 * one line per cause. Never the SQL, its parameters or a secret.
 */
export function describeError(error: unknown): string {
  const top = serializeError(error);
  const lines = [top.stack ? top.stack.replace(/^[^\n]*/, headline(top)) : headline(top)];
  for (const e of top.errors ?? []) {
    lines.push(`  error: ${headline(e)}`);
  }
  for (let cause = top.cause; cause; cause = cause.cause) {
    lines.push(`caused by: ${headline(cause)}`);
  }
  return lines.join('\n');
}

const WARN = 40;

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** On every line and of no use to a person at a terminal (the time is shown on its own). */
const PRETTY_OMIT = new Set(['level', 'time', 'pid', 'hostname', 'service', 'msg', 'err', 'error']);

function prettyValue(value: unknown): string {
  return typeof value === 'string' && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
}

/**
 * One pino JSON line as a person reads it (LOG_FORMAT=pretty): `12:04:05.123 INFO  message
 * key=value ...`, an error's scrubbed stack indented below it, and a request line summarised as
 * `GET /v1/me 200 3.1 ms`. The entry is the one the JSON format writes, already scrubbed, so
 * nothing shows here that JSON would not. Anything that is not JSON passes through.
 */
export function formatPretty(line: string): string {
  return line
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => `${prettyLine(l)}\n`)
    .join('');
}

function prettyLine(line: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (entry === null || typeof entry !== 'object') {
    return line;
  }
  const time = typeof entry.time === 'number' ? new Date(entry.time).toISOString().slice(11, 23) : '';
  const level = (LEVEL_NAMES[entry.level as number] ?? String(entry.level)).padEnd(5);
  if ((entry.msg === 'request' || entry.msg === 'request failed') && typeof entry.method === 'string') {
    // The access log (http/access-log.ts): the request id only where one goes looking for it.
    const id = entry.msg === 'request failed' ? ` request ${prettyValue(entry.requestId)}` : '';
    return `${time} ${level} ${entry.method} ${entry.path} ${entry.status} ${entry.ms} ms${id}`;
  }
  let out = `${time} ${level} ${typeof entry.msg === 'string' ? entry.msg : ''}`;
  for (const [key, value] of Object.entries(entry)) {
    if (!PRETTY_OMIT.has(key) && value !== undefined) {
      out += ` ${key}=${prettyValue(value)}`;
    }
  }
  for (const key of ['err', 'error']) {
    const e = entry[key] as Partial<SerializedError> | undefined;
    if (e && typeof e === 'object') {
      out += `\n    ${(e.stack ?? `${e.type}: ${e.message}`).replace(/\n\s*/g, '\n    ')}`;
    }
  }
  return out;
}

/** `stream` written in LOG_FORMAT=pretty: each line formatted, flushes passed on. */
export function prettyDestination(stream: DestinationStream & { flush?: (cb?: (err?: Error) => void) => void }): DestinationStream {
  return Object.assign(
    { write: (chunk: string) => stream.write(formatPretty(chunk)) },
    stream.flush ? { flush: (cb?: (err?: Error) => void) => stream.flush?.(cb) } : {},
  );
}

/**
 * The process logger. Asynchronous stdout by default: a synchronous write per request line stalls
 * the event loop under load; shutdown awaits `flushLogger`. LOG_FORMAT=pretty (the default in
 * development) writes readable lines instead of JSON (formatPretty).
 */
export function createLogger(
  config: Pick<Config, 'logLevel'> & Partial<Pick<Config, 'logFormat'>>,
  destination?: DestinationStream,
  /** Fields added to every entry: the active span's trace and span ids when tracing runs (tracing.ts). */
  mixin?: () => Record<string, string>,
): Logger {
  const stream = destination ?? pino.destination({ dest: 1, sync: false });
  return pino(
    {
      level: config.logLevel,
      ...(mixin ? { mixin } : {}),
      base: { service: 'svc' },
      serializers: { err: serializeError, error: serializeError },
      hooks: {
        // Libraries log errors as text too (Graphile Worker: "Failed task ... with error '<message>'
        // <stack>"), so warnings and errors have their string arguments scrubbed as well.
        logMethod(args, method, level) {
          if (level >= WARN) {
            for (let i = 0; i < args.length; i++) {
              const arg = args[i];
              if (typeof arg === 'string') {
                (args as unknown[])[i] = scrubText(arg);
              }
            }
          }
          return method.apply(this, args);
        },
      },
    },
    config.logFormat === 'pretty' ? prettyDestination(stream) : stream,
  );
}

/** Resolves once everything logged so far is written (or after `timeoutMs`, whichever is first). */
export function flushLogger(logger: Logger, timeoutMs = 2000): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    timer.unref();
    try {
      logger.flush(() => {
        clearTimeout(timer);
        resolve();
      });
    } catch {
      clearTimeout(timer);
      resolve();
    }
  });
}

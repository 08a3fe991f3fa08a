import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError } from '@svc/contracts/errors';
import { ZodError } from 'zod';
import { toIssues } from '../trpc/errors.ts';
import { MAX_BODY_BYTES } from './edge.ts';
import { sendError, sendValidationFailed } from './errors.ts';
import { refusedInput } from './input-guard.ts';

/** A body being read: kept on its request, so the listeners below need no closure per request. */
const READING = Symbol('svc.readingBody');
type Reading = IncomingMessage & {
  [READING]?: { chunks: Buffer[]; size: number; limit: number; resolve: (text: string) => void; reject: (error: unknown) => void };
};

// The listeners are functions of this module, called with the request as `this`, rather than
// closures made per request: tsx compiles with esbuild's keepNames, which names every named
// closure with a defineProperty call each time it is made (as in http/edge.ts and trpc/call.ts).

function onBodyData(this: Reading, chunk: Buffer): void {
  const reading = this[READING];
  if (!reading) {
    return;
  }
  reading.size += chunk.length;
  if (reading.size > reading.limit) {
    stopReading(this);
    this.resume();
    reading.reject(new AppError('payload_too_large', 'Request body too large'));
    return;
  }
  reading.chunks.push(chunk);
}

function onBodyEnd(this: Reading): void {
  const reading = this[READING];
  if (!reading) {
    return;
  }
  stopReading(this);
  const { chunks } = reading;
  reading.resolve(chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8'));
}

function onBodyError(this: Reading, error: unknown): void {
  const reading = this[READING];
  stopReading(this);
  reading?.reject(error);
}

/** The error listener stays: an error after the body was read (a reset connection) finds nothing to reject, and crashes nothing. */
function stopReading(req: Reading): void {
  req.off('data', onBodyData);
  req.off('end', onBodyEnd);
  req[READING] = undefined;
}

/** The request body as text, at most `limit` bytes (413 payload_too_large beyond; the rest is drained). */
function readText(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    (req as Reading)[READING] = { chunks: [], size: 0, limit, resolve, reject };
    req.on('data', onBodyData);
    req.on('end', onBodyEnd);
    req.on('error', onBodyError);
  });
}

/**
 * The JSON body reader of the routes svc reads itself (`/v1` operations, usage ingestion): at most
 * MAX_BODY_BYTES (413 payload_too_large), valid JSON (400 malformed_request), and input the one
 * input rule accepts (input-guard.ts; refused input throws its ZodError) before anything else
 * walks it. An empty body is undefined. `answerBodyRefusal` answers what it throws.
 */
export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const text = await readText(req, MAX_BODY_BYTES);
  if (text === '') {
    return undefined;
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new AppError('malformed_request', 'Request body is not valid JSON');
  }
  const refused = refusedInput(body);
  if (refused) {
    throw refused;
  }
  return body;
}

/**
 * Answers what readJsonBody refused (its AppError, or the input rule's 400 validation_failed with
 * issues) and gives true; anything else is not a refusal and gives false.
 */
export function answerBodyRefusal(req: IncomingMessage, res: ServerResponse, error: unknown): boolean {
  if (error instanceof AppError) {
    sendError(req, res, error.code, error.message);
    return true;
  }
  if (error instanceof ZodError) {
    sendValidationFailed(req, res, toIssues(error.issues));
    return true;
  }
  return false;
}

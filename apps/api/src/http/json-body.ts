import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError } from '@svc/contracts/errors';
import { ZodError } from 'zod';
import { toIssues } from '../trpc/errors.ts';
import { MAX_BODY_BYTES } from './edge.ts';
import { sendError, sendValidationFailed } from './errors.ts';
import { refusedInput } from './input-guard.ts';

/** The request body as text, at most `limit` bytes (413 payload_too_large beyond; the rest is drained). */
function readText(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        req.off('end', onEnd);
        req.resume();
        reject(new AppError('payload_too_large', 'Request body too large'));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => resolve(chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', reject);
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

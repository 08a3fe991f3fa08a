import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ErrorCode, statusOf } from '@svc/contracts/errors';

/** Writes a JSON answer on a plain Node response (Express responses are Node responses too). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}

/** Writes the one error body shape for errors raised outside tRPC (middleware, 404, 429). */
export function sendError(req: IncomingMessage, res: ServerResponse, code: ErrorCode, message: string): void {
  sendJson(res, statusOf(code), { error: { code, message, requestId: requestIdOf(req) } });
}

/**
 * The 400 of a request whose input fails its schema, outside tRPC: the body the tRPC error
 * formatter gives the same failure (`issues` as trpc/errors.ts toIssues builds them).
 */
export function sendValidationFailed(req: IncomingMessage, res: ServerResponse, issues: unknown): void {
  sendJson(res, statusOf('validation_failed'), {
    error: { code: 'validation_failed', message: 'Input validation failed', requestId: requestIdOf(req), issues },
  });
}

export function requestIdOf(req: IncomingMessage): string {
  return (req as IncomingMessage & { id?: string }).id ?? 'unknown';
}

import { type ErrorCode, statusOf } from '@svc/contracts/errors';
import type { Request, Response } from 'express';

/** Writes the one error body shape for errors raised outside tRPC (middleware, 404, 429). */
export function sendError(req: Request, res: Response, code: ErrorCode, message: string): void {
  res.status(statusOf(code)).json({ error: { code, message, requestId: requestIdOf(req) } });
}

export function requestIdOf(req: Request): string {
  return (req as Request & { id?: string }).id ?? 'unknown';
}

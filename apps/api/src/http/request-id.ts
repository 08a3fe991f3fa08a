import type { IncomingMessage, ServerResponse } from 'node:http';
import { newId } from '@svc/contracts/ids';

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** Adopts a caller's X-Request-Id when it is safe to log, else mints one; echoes it back. */
export function assignRequestId(req: IncomingMessage, res: ServerResponse): void {
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && SAFE_REQUEST_ID.test(incoming) ? incoming : newId('request');
  (req as IncomingMessage & { id: string }).id = id;
  res.setHeader('X-Request-Id', id);
}

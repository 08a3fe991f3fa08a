import type { IncomingMessage } from 'node:http';

/** The id http/request-id.ts gave the request (its access log line, error bodies and audit entries carry it). */
export function requestIdOf(req: IncomingMessage): string {
  return (req as IncomingMessage & { id?: string }).id ?? 'unknown';
}

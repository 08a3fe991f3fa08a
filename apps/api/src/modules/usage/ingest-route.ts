import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError } from '@svc/contracts/errors';
import { type TUsageChannel, ZIngestUsageRequest } from '@svc/contracts/usage';
import type { AppServices } from '../../context.ts';
import { runBehindEdge } from '../../http/behind-edge.ts';
import { fromAllowedOrigin } from '../../http/csrf.ts';
import { type Edge, MAX_BODY_BYTES, normalizePath } from '../../http/edge.ts';
import { sendError, sendJson, sendValidationFailed } from '../../http/errors.ts';
import { toIssues } from '../../trpc/errors.ts';
import { ingestUsage, usageWriterOf } from './ingest.ts';

const ROUTES = new Map<string, TUsageChannel>([
  ['/v1/usage/events', 'usage'],
  ['/v1/usage-events', 'metering'],
]);

/** The request body as text, at most `limit` bytes (413 payload_too_large beyond; the rest is drained). */
function readBody(req: IncomingMessage, limit: number): Promise<string> {
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
 * POST /v1/usage/events and POST /v1/usage-events, answered before Express (the hot ingestion
 * path: Express's setup and trpc-to-openapi's Request conversion and middleware chain cost more
 * than a group-committed event). It keeps the Express path's order and answers exactly: the edge
 * (request id, log, headers, rate limit), the CSRF rule for requests carrying a cookie (403
 * csrf_rejected), 415 for a body that is not JSON, 413 over MAX_BODY_BYTES, 400
 * malformed_request for bad JSON, then the writer (401/403/409), then the body (400
 * validation_failed with issues), then `ingestUsage`, the function the procedures
 * `usage.events.create` and `usage.metering.create` call, which stay the documented
 * definitions (OpenAPI, /trpc).
 *
 * Returns a function that takes the request (true) or leaves it to Express (false).
 */
export function createUsageIngestRoute(services: AppServices, edge: Edge): (req: IncomingMessage, res: ServerResponse) => boolean {
  const allowedOrigins = new Set([new URL(services.config.publicUrl).origin]);

  async function handle(req: IncomingMessage, res: ServerResponse, channel: TUsageChannel): Promise<void> {
    const contentType = (req.headers['content-type'] ?? '').toLowerCase();
    if (req.headers.cookie) {
      if (!contentType.startsWith('application/json')) {
        sendError(req, res, 'csrf_rejected', 'cookie-authenticated mutations must send content-type application/json');
        return;
      }
      if (!fromAllowedOrigin(req, allowedOrigins)) {
        sendError(req, res, 'csrf_rejected', 'cross-site request refused');
        return;
      }
    }
    if (!contentType.startsWith('application/json')) {
      throw new AppError('unsupported_media_type', 'Send a JSON body with content-type application/json');
    }
    const text = await readBody(req, MAX_BODY_BYTES);
    let body: unknown;
    try {
      body = text === '' ? {} : JSON.parse(text);
    } catch {
      throw new AppError('malformed_request', 'Request body is not valid JSON');
    }
    const writer = await usageWriterOf(services, req);
    const input = ZIngestUsageRequest.safeParse(body);
    if (!input.success) {
      sendValidationFailed(req, res, toIssues(input.error.issues));
      return;
    }
    const answer = await ingestUsage(services, writer, input.data, channel);
    sendJson(res, answer.status, answer.body);
  }

  return (req, res) => {
    if (req.method !== 'POST') {
      return false;
    }
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const rawPath = q === -1 ? url : url.slice(0, q);
    const channel = ROUTES.get(normalizePath(rawPath));
    if (!channel) {
      return false;
    }
    runBehindEdge(services, edge, req, res, rawPath, () => handle(req, res, channel));
    return true;
  };
}

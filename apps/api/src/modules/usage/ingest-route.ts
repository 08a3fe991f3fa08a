import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError } from '@svc/contracts/errors';
import { type TUsageChannel, ZIngestUsageRequest } from '@svc/contracts/usage';
import type { AppServices } from '../../context.ts';
import { runBehindEdge } from '../../http/behind-edge.ts';
import { fromAllowedOrigin } from '../../http/csrf.ts';
import { type Edge, normalizePath } from '../../http/edge.ts';
import { sendError, sendJson, sendValidationFailed } from '../../http/errors.ts';
import { answerBodyRefusal, readJsonBody } from '../../http/json-body.ts';
import { toIssues } from '../../trpc/errors.ts';
import { ingestUsage, usageWriterOf } from './ingest.ts';

const ROUTES = new Map<string, TUsageChannel>([
  ['/v1/usage/events', 'usage'],
  ['/v1/usage-events', 'metering'],
]);

/**
 * POST /v1/usage/events and POST /v1/usage-events, answered before Express (the hot ingestion
 * path: Express's setup and trpc-to-openapi's Request conversion and middleware chain cost more
 * than a group-committed event). It keeps the Express path's order and answers exactly: the edge
 * (request id, log, headers, rate limit), the CSRF rule for requests carrying a cookie (403
 * csrf_rejected), 415 for a body that is not JSON, 413 over MAX_BODY_BYTES, 400
 * malformed_request for bad JSON, 400 validation_failed for input no route accepts
 * (http/input-guard.ts), then the writer (401/403/409), then the body (400
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
    // The reader of every JSON route: 413, 400 malformed_request, then the input rule
    // (input-guard.ts), all before credentials, as on the Express path.
    let body: unknown;
    try {
      body = (await readJsonBody(req)) ?? {};
    } catch (error) {
      if (answerBodyRefusal(req, res, error)) {
        return;
      }
      throw error;
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

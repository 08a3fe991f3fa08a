import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError, type ErrorCode, statusOf } from '@svc/contracts/errors';
import { isDatabaseUnavailable } from '@svc/db/client';
import { requestIdOf } from '../modules/shared/request-id.ts';
import { upgradeUrlFor } from '../modules/subscriptions/upgrade-url.ts';

/** Retry-After (seconds) of a 503 service_unavailable that does not set its own. */
export const SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/**
 * What a thrown error answers as, when it is one of ours: an AppError as itself, a database that
 * cannot be reached (refused, reset, shut down, no connection within DATABASE_TIMEOUT_MS) as 503
 * service_unavailable. Undefined for anything else, which is a bug and answers 500 internal.
 * Every transport (tRPC, /v1, Express routes) translates through this.
 */
export function asAppError(error: unknown): AppError | undefined {
  if (error instanceof AppError) {
    return error;
  }
  if (isDatabaseUnavailable(error)) {
    return new AppError('service_unavailable', 'the database is unavailable; retry shortly');
  }
  return undefined;
}

/**
 * Writes a JSON answer on a plain Node response (Express responses are Node responses too);
 * `json` is the body already serialized, when the caller keeps it.
 */
export function sendJson(res: ServerResponse, status: number, body: unknown, json = JSON.stringify(body)): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}

/**
 * What an error body carries beside code, message and requestId, on every transport: the
 * AppError's machine-readable fields (a 402's limit, max, used, requested, periodEnd, plan:
 * ZSubscriptionRefusal in contracts) and, for a subscription refusal, its upgradeUrl.
 */
export function errorFields(error: AppError | undefined, config: { subscriptionUpgradeUrl: string | null }): Record<string, unknown> {
  if (!error?.details) {
    return {};
  }
  return error.organizationId === undefined
    ? { ...error.details }
    : { ...error.details, upgradeUrl: upgradeUrlFor(config.subscriptionUpgradeUrl, error.organizationId) };
}

/**
 * The one error body of svc's JSON answers (docs/architecture.md section 4):
 * `{ code, message, requestId, ...fields }`, where `fields` are errorFields' (a 402's limit and
 * upgrade URL) and a validation failure's `issues`. Every transport writes it through here: /v1
 * and Express routes (sendError), /trpc's error formatter (under its envelope's `error`), the
 * engine proxy and the socket's own 400 and 431.
 */
export function errorBody(
  code: ErrorCode,
  message: string,
  requestId: string,
  fields: Record<string, unknown> = {},
): { code: ErrorCode; message: string; requestId: string } & Record<string, unknown> {
  return { code, message, requestId, ...fields };
}

/**
 * Writes the one error body shape for errors raised outside tRPC (middleware, 404, 429); a 503
 * carries Retry-After. `fields` are errorFields' (sendAppError passes them).
 */
export function sendError(
  req: IncomingMessage,
  res: ServerResponse,
  code: ErrorCode,
  message: string,
  fields: Record<string, unknown> = {},
): void {
  if (code === 'service_unavailable' && !res.hasHeader('Retry-After')) {
    res.setHeader('Retry-After', String(SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS));
  }
  sendJson(res, statusOf(code), { error: errorBody(code, message, requestIdOf(req), fields) });
}

/** Answers a thrown AppError outside tRPC: its code, message and fields. */
export function sendAppError(
  req: IncomingMessage,
  res: ServerResponse,
  error: AppError,
  config: { subscriptionUpgradeUrl: string | null },
): void {
  sendError(req, res, error.code, error.message, errorFields(error, config));
}

/**
 * The 400 of a request whose input fails its schema, outside tRPC: the body the tRPC error
 * formatter gives the same failure (`issues` as trpc/errors.ts toIssues builds them).
 */
export function sendValidationFailed(req: IncomingMessage, res: ServerResponse, issues: unknown): void {
  sendJson(res, statusOf('validation_failed'), {
    error: errorBody('validation_failed', 'Input validation failed', requestIdOf(req), { issues }),
  });
}

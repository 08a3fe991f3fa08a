import { AppError, ERROR_CODES, type ErrorCode, statusOf } from '@svc/contracts/errors';
import { TRPCError } from '@trpc/server';
import { ZodError } from 'zod';
import { asAppError } from '../http/errors.ts';

export type ClassifiedError = {
  code: ErrorCode;
  message: string;
  /** The AppError behind it, whose fields the body carries too (http/errors.ts errorFields). */
  appError?: AppError;
  issues?: { path: (string | number)[]; message: string }[];
};

const BY_TRPC_CODE: Partial<Record<TRPCError['code'], ClassifiedError>> = {
  NOT_FOUND: { code: 'not_found', message: 'No such route' },
  PARSE_ERROR: { code: 'malformed_request', message: 'Request body is not valid JSON' },
  PAYLOAD_TOO_LARGE: { code: 'payload_too_large', message: 'Request body too large' },
  UNSUPPORTED_MEDIA_TYPE: { code: 'unsupported_media_type', message: 'Send a JSON body with content-type application/json' },
  METHOD_NOT_SUPPORTED: { code: 'method_not_allowed', message: 'Method not allowed' },
  TOO_MANY_REQUESTS: { code: 'rate_limited', message: 'Too many requests' },
  UNAUTHORIZED: { code: 'unauthenticated', message: 'Authentication required' },
  FORBIDDEN: { code: 'forbidden', message: 'Forbidden' },
};

/** Zod issues as our error body lists them. */
export function toIssues(issues: readonly { path: readonly PropertyKey[]; message: string }[]): ClassifiedError['issues'] {
  return issues.map((i) => ({ path: i.path.map((p) => (typeof p === 'symbol' ? String(p) : p)), message: i.message }));
}

function findAppError(error: unknown): AppError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth++) {
    if (current instanceof AppError) {
      return current;
    }
    current = (current as { cause?: unknown }).cause;
  }
  // Not ours: a database that cannot be reached is still a 503, whichever layer threw it.
  return error instanceof TRPCError ? asAppError(error.cause) : asAppError(error);
}

/** Maps whatever a procedure threw to one of our codes; a 500 never carries its cause. */
export function classifyError(error: TRPCError): ClassifiedError {
  const appError = findAppError(error);
  if (appError) {
    return { code: appError.code, message: appError.message, appError };
  }
  if (error.code === 'BAD_REQUEST' && error.cause instanceof ZodError) {
    return {
      code: 'validation_failed',
      message: 'Input validation failed',
      issues: toIssues(error.cause.issues),
    };
  }
  if (error.code === 'BAD_REQUEST') {
    return { code: 'validation_failed', message: 'Bad request' };
  }
  return BY_TRPC_CODE[error.code] ?? { code: 'internal', message: 'Internal server error' };
}

export function statusOfError(error: TRPCError): number {
  return statusOf(classifyError(error).code);
}

export function isInternal(error: TRPCError): boolean {
  return classifyError(error).code === 'internal';
}

/** Our code -> the tRPC code (one table, in contracts), so `/trpc` answers `/v1`'s status. */
export function toTrpcError(error: AppError): TRPCError {
  return new TRPCError({ code: ERROR_CODES[error.code].trpc, message: error.message, cause: error });
}

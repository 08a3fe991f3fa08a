import { isTRPCClientError } from '@trpc/client';

/** What the console shows for any failure: our snake_case code, a message, the request id. */
export type ParsedError = {
  code: string;
  message: string;
  /** Quote this to an operator: it is the id in the api's logs. */
  requestId: string | undefined;
  httpStatus: number | undefined;
};

const GENERIC_MESSAGE = 'Something went wrong. Try again, and quote the request id if it persists.';

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
}

function asString(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function headerRequestId(meta: unknown): string | undefined {
  const response = asRecord(meta)?.response;
  if (response instanceof Response) {
    return asString(response.headers.get('x-request-id'));
  }
  return undefined;
}

/**
 * Parse any thrown value once. The api's error formatter puts our code in `error.data.code` and the
 * request id in `error.data.requestId`; everything else (network failure, a proxy's HTML page, a
 * render crash) gets a stable code of its own so the panel never shows `undefined`.
 */
export function parseError(error: unknown): ParsedError {
  if (isTRPCClientError(error)) {
    const data = asRecord(error.data);
    const httpStatus = typeof data?.httpStatus === 'number' ? data.httpStatus : undefined;
    const code = asString(data?.code);
    if (code !== undefined) {
      return {
        code,
        message: error.message || GENERIC_MESSAGE,
        requestId: asString(data?.requestId) ?? headerRequestId(error.meta),
        httpStatus,
      };
    }
    // No tRPC error body: the request never reached the api, or something in between answered.
    const response = asRecord(error.meta)?.response;
    const status = response instanceof Response ? response.status : undefined;
    return {
      code: status === undefined ? 'network_error' : 'unexpected_response',
      message:
        status === undefined
          ? 'The svc api could not be reached, or it returned an unreadable response.'
          : `The server answered with an unexpected response (HTTP ${status}).`,
      requestId: headerRequestId(error.meta),
      httpStatus: status,
    };
  }
  if (error instanceof Response) {
    return {
      code: error.status === 404 ? 'not_found' : 'unexpected_response',
      message: error.statusText || GENERIC_MESSAGE,
      requestId: asString(error.headers.get('x-request-id')),
      httpStatus: error.status,
    };
  }
  // react-router's ErrorResponse (thrown `data()` / 404 from the router itself).
  const routeError = asRecord(error);
  if (routeError && typeof routeError.status === 'number' && 'internal' in routeError) {
    return {
      code: routeError.status === 404 ? 'not_found' : 'unexpected_response',
      message: asString(routeError.statusText) ?? GENERIC_MESSAGE,
      requestId: undefined,
      httpStatus: routeError.status,
    };
  }
  return {
    code: 'client_error',
    message: error instanceof Error && error.message ? error.message : GENERIC_MESSAGE,
    requestId: undefined,
    httpStatus: undefined,
  };
}

/** 4xx answers are decisions, not glitches: retrying them only repeats the same answer. */
export function isRetryable(error: unknown): boolean {
  const { httpStatus, code } = parseError(error);
  if (code === 'network_error') {
    return true;
  }
  return httpStatus === undefined || httpStatus >= 500;
}

/**
 * A machine-readable field the api's error body carries beside code and message (e.g. the
 * pending invitation's `invitationId` of a 409 `invitation_already_pending`), if it is a string.
 */
export function errorStringField(error: unknown, name: string): string | undefined {
  if (!isTRPCClientError(error)) {
    return undefined;
  }
  return asString(asRecord(asRecord(error.shape)?.error)?.[name]);
}

import type { AppRouter } from '@svc/api/router';
import type { ErrorCode } from '@svc/contracts/errors';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';

export type SvcClientOptions = {
  /** Where svc runs, e.g. https://auth.example.com (no /trpc suffix). */
  baseUrl: string;
  /** `sk_live_...`: an application secret key (or a tenant API key secret). Keep it server-side. */
  secretKey: string;
  /** Custom fetch (tests, proxies); defaults to the global fetch. */
  fetch?: typeof fetch;
};

/**
 * A typed tRPC client for backend services. Every call sends the secret key as
 * `Authorization: Bearer`; types come from the server's router, so a renamed field is a
 * compile error, not a runtime surprise.
 */
export function createSvcClient(opts: SvcClientOptions) {
  const url = `${opts.baseUrl.replace(/\/+$/, '')}/trpc`;
  return createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url,
        fetch: opts.fetch,
        headers: () => ({ authorization: `Bearer ${opts.secretKey}` }),
      }),
    ],
  });
}

export type SvcClient = ReturnType<typeof createSvcClient>;

/** svc's stable error code (e.g. `invalid_secret_key`) of a failed call, if it is one of ours. */
export function svcErrorCode(error: unknown): ErrorCode | undefined {
  if (error instanceof TRPCClientError) {
    const data = error.data as { code?: ErrorCode } | undefined;
    return data?.code;
  }
  return undefined;
}

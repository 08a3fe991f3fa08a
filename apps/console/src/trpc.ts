import type { AppRouter } from '@svc/api/router';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { createTRPCContext } from '@trpc/tanstack-react-query';

/**
 * The console's one tRPC context. Pages read data with `useTRPC()` + `queryOptions` /
 * `mutationOptions` (STYLE.md 15); there is no bespoke hook per endpoint.
 */
export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();

/**
 * Same-origin `/trpc`: the api serves this bundle, so the session cookie travels with every call.
 * Plain JSON (no transformer) so `/trpc` and `/v1` return the same shapes.
 */
export function makeTRPCClient() {
  return createTRPCClient<AppRouter>({
    links: [
      httpBatchLink({
        url: '/trpc',
        fetch: (input, init) => fetch(input, { ...init, credentials: 'include' }),
      }),
    ],
  });
}

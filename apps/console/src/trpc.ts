import type { AppRouter } from '@svc/api/router';
import { MAX_TRPC_BATCH } from '@svc/contracts/batching';
import { createTRPCClient, httpBatchLink, httpLink, splitLink } from '@trpc/client';
import { createTRPCContext } from '@trpc/tanstack-react-query';

/**
 * The console's one tRPC context. Pages read data with `useTRPC()` + `queryOptions` /
 * `mutationOptions` (docs/conventions.md section 7); there is no bespoke hook per endpoint.
 */
export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();

/** Sent with the cookie: the api serves this bundle, so every call is same-origin. */
const sameOriginFetch: typeof fetch = (input, init) => fetch(input, { ...init, credentials: 'include' });

/**
 * Same-origin `/trpc`: the api serves this bundle, so the session cookie travels with every call.
 * Plain JSON (no transformer) so `/trpc` and `/v1` return the same shapes.
 *
 * The header's session check (`me.get`) goes alone: it is the call whose 401 sends the browser
 * to sign-in, so it neither waits for nor shares a (207 multi-status) batch with page data.
 * Other calls batch at most MAX_TRPC_BATCH at a time: the server refuses a longer batch whole.
 */
export function makeTRPCClient() {
  return createTRPCClient<AppRouter>({
    links: [
      splitLink({
        condition: (op) => op.path === 'me.get',
        true: httpLink({ url: '/trpc', fetch: sameOriginFetch }),
        false: httpBatchLink({ url: '/trpc', fetch: sameOriginFetch, maxItems: MAX_TRPC_BATCH }),
      }),
    ],
  });
}

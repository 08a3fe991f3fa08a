import { providerContext } from './internals.ts';

/**
 * oidc-provider keeps the request it is handling in an AsyncLocalStorage (`Provider.ctx`: token
 * lifetimes, extra token claims and svc's client secret check read it). On Node 20 a running
 * AsyncLocalStorage turns promise hooks on for the whole process, and it stays running once any
 * provider request has run: from then on every promise of every request, API routes included,
 * is tracked and tagged. That cost the API-key routes about 8% of their CPU (bench tenant-read).
 *
 * `providerRequestsInFlight` is every provider's first middleware: it counts the provider's
 * requests under way, in all providers of the process (the storage is one per process), and
 * turns the storage off (`disable()`) when the last one has finished. The next provider request
 * turns it on again (oidc-provider's own `run`), so the hooks run only while someone signs in.
 * Nothing of a finished provider request reads the store afterwards: oidc-provider reads it only
 * inside its route handlers, which the count waits for.
 */
let inFlight = 0;

export async function providerRequestsInFlight(_ctx: unknown, next: () => Promise<unknown>): Promise<void> {
  inFlight++;
  try {
    await next();
  } finally {
    inFlight--;
    if (inFlight === 0) {
      providerContext.disable();
    }
  }
}

/** The storage oidc-provider reads `Provider.ctx` from (tests). */
export { providerContext };

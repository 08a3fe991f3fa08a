import type { AppRouter } from '@svc/api/router';
import type { ErrorCode } from '@svc/contracts/errors';
import { type TSubscriptionRefusal, ZSubscriptionRefusal } from '@svc/contracts/subscriptions';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';

export type SvcClientOptions = {
  /** Where svc runs, e.g. https://auth.example.com (no /trpc suffix). */
  baseUrl: string;
  /**
   * `sk_live_...`: an application secret key (backend routes) or a tenant API key secret (the
   * control-plane routes its scopes allow, in its own organization). Keep it server-side.
   */
  secretKey: string;
  /** Custom fetch (tests, proxies); defaults to the global fetch. */
  fetch?: typeof fetch;
};

/**
 * A typed tRPC client for backend services. Every call sends the secret key as
 * `Authorization: Bearer`; types come from the server's router, so a renamed field is a
 * compile error, not a runtime surprise.
 *
 * With a tenant API key the control plane is reachable within the key's scopes and organization
 * (`organization_slug` may be left out: the key's organization is used), for example
 * `svc.tenants.get.query({ id })` (tenant.read), `svc.users.list.query({})` (users.read),
 * `svc.sessions.revoke.mutate({ id })` (sessions.revoke), `svc.auditLogs.list.query({})`
 * (audit.read). The full table is in packages/client/README.md. A call outside the key's scopes
 * fails with `svcErrorCode(e) === 'forbidden'`; an id of another organization with `not_found`.
 */
export function createSvcClient(opts: SvcClientOptions) {
  const url = `${opts.baseUrl.replace(/\/+$/, '')}/trpc`;
  const trpc = createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url,
        fetch: opts.fetch,
        headers: () => ({ authorization: `Bearer ${opts.secretKey}` }),
      }),
    ],
  });
  const events = {
    list: trpc.events.list,
    /** Every event of the feed after `cursor` (default: from the start), following nextCursor (iterateEvents). */
    iterate: (input: EventsIterateInput = {}) => iterateEvents(trpc.events.list, input),
  };
  const checks = {
    /**
     * May the person do `permission` (a product permission or one of svc's) in the organization
     * now? True only when svc answers allowed; a refusal of the question itself (not_found for an
     * organization the key may not ask about, unknown_permission, a network failure) throws, so
     * an outage is never read as "allowed". `svc.permissions.check.query(...)` gives the whole
     * answer (role, organizationId).
     */
    can: async (input: CanInput): Promise<boolean> =>
      (await trpc.permissions.check.query({ ...organizationOf(input), userId: input.userId, permission: input.permission })).allowed,
    /**
     * May the organization use `feature` now (its plan includes it, its subscription is active or
     * trialing, and a usage-limited feature has quantity left this month)? Throws like `can`;
     * `svc.permissions.check.query({ feature })` gives plan, status and remaining.
     */
    hasFeature: async (input: HasFeatureInput): Promise<boolean> =>
      (
        await trpc.permissions.check.query({
          ...organizationOf(input),
          ...(input.userId !== undefined ? { userId: input.userId } : {}),
          feature: input.feature,
        })
      ).allowed,
  };
  // The tRPC client is a proxy answering any path: `events`, `can` and `hasFeature` are ours, the rest its own.
  return new Proxy(trpc, {
    get: (target, prop, receiver) =>
      prop === 'events' ? events : prop === 'can' || prop === 'hasFeature' ? checks[prop] : Reflect.get(target, prop, receiver),
  }) as Omit<typeof trpc, 'events'> & { events: typeof events } & typeof checks;
}

/**
 * Which organization a check is about: by id or by slug, or neither (the key's own organization:
 * an application's, or a tenant API key's).
 */
export type CheckOrganization =
  | { organizationId: string; organizationSlug?: never }
  | { organizationSlug: string; organizationId?: never }
  | { organizationId?: undefined; organizationSlug?: undefined };

/** `svc.can(...)`: the person and the permission, in an organization. */
export type CanInput = CheckOrganization & { userId: string; permission: string };

/**
 * `svc.hasFeature(...)`: the feature, in an organization. An application asking about an
 * organization other than its own names a person who signed in to it for that organization
 * (docs/authorization.md, "Checking a permission").
 */
export type HasFeatureInput = CheckOrganization & { feature: string; userId?: string };

function organizationOf(input: CheckOrganization): { organizationId?: string; organization_slug?: string } {
  if (input.organizationId !== undefined) {
    return { organizationId: input.organizationId };
  }
  return input.organizationSlug !== undefined ? { organization_slug: input.organizationSlug } : {};
}

export type SvcClient = ReturnType<typeof createSvcClient>;

type FeedPage = inferRouterOutputs<AppRouter>['events']['list'];
type FeedEvent = FeedPage['data'][number];

/** What `svc.events.iterate` reads: the feed's filters, where to start, and whether to wait for more. */
export type EventsIterateInput = {
  /** Catalogued event types (default: every type the key may read). */
  types?: readonly string[];
  /** Events created at or after / strictly before these ISO 8601 instants. */
  from?: string;
  to?: string;
  organization_slug?: string;
  /** A nextCursor kept from before (same filters): continue after it. */
  cursor?: string;
  /** Events per request, 1-500 (default 500). */
  pageSize?: number;
  /** Called with each page's nextCursor once its events were yielded: persist it to resume later. */
  onCursor?: (cursor: string) => void | Promise<void>;
  /**
   * Keep waiting for new events once caught up, asking again every `follow.intervalMs` (default
   * 1000) until `follow.signal` aborts. Without it the iteration ends when caught up.
   */
  follow?: { intervalMs?: number; signal?: AbortSignal };
};

/**
 * The events feed as an async iterator: pages of GET /v1/events (`events.list`) in order,
 * following nextCursor, each event yielded once. Feed errors are thrown as the call's error
 * (`svcErrorCode(e) === 'cursor_expired'`: the kept cursor is older than the retention window).
 */
export async function* iterateEvents(
  list: { query: (input: inferRouterInputs<AppRouter>['events']['list']) => Promise<FeedPage> },
  input: EventsIterateInput,
): AsyncGenerator<FeedEvent, void, undefined> {
  let cursor = input.cursor;
  const intervalMs = input.follow?.intervalMs ?? 1000;
  const signal = input.follow?.signal;
  while (!signal?.aborted) {
    const page = await list.query({
      ...(input.types ? { types: input.types.join(',') } : {}),
      ...(input.from ? { from: input.from } : {}),
      ...(input.to ? { to: input.to } : {}),
      ...(input.organization_slug ? { organization_slug: input.organization_slug } : {}),
      ...(cursor ? { cursor } : {}),
      limit: input.pageSize ?? 500,
    });
    for (const event of page.data) {
      yield event;
    }
    if (page.nextCursor && page.nextCursor !== cursor) {
      cursor = page.nextCursor;
      await input.onCursor?.(cursor);
    }
    if (!page.hasMore) {
      if (!input.follow) {
        return;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs);
        signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}

/** Input of every call, by router path: `SvcInputs['users']['create']`. */
export type SvcInputs = inferRouterInputs<AppRouter>;
/** Answer of every call, by router path: `SvcOutputs['apiKeys']['list']['data'][number]`. */
export type SvcOutputs = inferRouterOutputs<AppRouter>;

/** What svc said about a failed call (the same facts `/v1` puts in its `error` body). */
export type SvcError = {
  /** Stable snake_case code from svc's error table, e.g. `forbidden`, `not_found`, `validation_failed`. */
  code: ErrorCode;
  message: string;
  /** Quote it to svc's operators: it is the id in the server's logs. */
  requestId: string | undefined;
  httpStatus: number | undefined;
  /** Which inputs were refused (`validation_failed` only). */
  issues?: { path: (string | number)[]; message: string }[];
  /**
   * A 402's facts (subscription_limit_exceeded: `limit`, `max`, `used`, `requested`,
   * `periodEnd`, `plan`, `upgradeUrl`; subscription_inactive: `status`, `plan`, `upgradeUrl`):
   * narrow on `refusal.code`. `svc.subscriptions.get.query({})` lists the same limits beforehand.
   */
  refusal?: TSubscriptionRefusal['error'];
};

type ErrorShape = {
  data?: { code?: ErrorCode; httpStatus?: number; requestId?: string };
  error?: { issues?: SvcError['issues'] };
};

/** The 402 fields of an error body, when it is one (checked against the contract's schema). */
function refusalOf(body: unknown): TSubscriptionRefusal['error'] | undefined {
  const parsed = ZSubscriptionRefusal.safeParse({ error: body });
  return parsed.success ? parsed.data.error : undefined;
}

/**
 * The svc error behind a failed call, or undefined when the failure is not svc's answer (the
 * network, a proxy's HTML page, a bug in the caller).
 */
export function svcError(error: unknown): SvcError | undefined {
  if (!(error instanceof TRPCClientError)) {
    return undefined;
  }
  const shape = error.shape as ErrorShape | undefined;
  const data = (error.data ?? shape?.data) as ErrorShape['data'];
  if (!data?.code) {
    return undefined;
  }
  const refusal = data.httpStatus === 402 ? refusalOf(shape?.error) : undefined;
  return {
    code: data.code,
    message: error.message,
    requestId: data.requestId,
    httpStatus: data.httpStatus,
    ...(shape?.error?.issues ? { issues: shape.error.issues } : {}),
    ...(refusal ? { refusal } : {}),
  };
}

/** svc's stable error code (e.g. `invalid_secret_key`) of a failed call, if it is one of ours. */
export function svcErrorCode(error: unknown): ErrorCode | undefined {
  return svcError(error)?.code;
}

/** True when `error` is svc's answer, with `code` when given: `if (isSvcError(e, 'not_found'))`. */
export function isSvcError(error: unknown, code?: ErrorCode): error is TRPCClientError<AppRouter> {
  const found = svcError(error);
  return found !== undefined && (code === undefined || found.code === code);
}

import {
  type TIngestUsageResponse,
  ZIngestUsageRequest,
  ZIngestUsageResponse,
  ZListUsageEventsRequest,
  ZUsageCounters,
  ZUsageCountersRequest,
  ZUsageEventPage,
  ZUsageSummary,
  ZUsageSummaryRequest,
} from '@svc/contracts/usage';
import { ingestUsage, USAGE_WRITE_ACCESS, usageWriterOf } from '../../modules/usage/ingest.ts';
import { getUsageCounters, getUsageSummary, listUsageEvents } from '../../modules/usage/service.ts';
import { accessOr, resolveAccess, resolveAccessOrOwnRule } from '../access.ts';
import { publicProcedure, router } from '../init.ts';
import { controlProcedure } from '../procedures.ts';

/**
 * Usage writers (docs/api.md "Usage"): an application secret key, a tenant API key with usage.write,
 * or a session with usage.write. The last two are control-plane callers (USAGE_WRITE_ACCESS).
 */
const usageWriterProcedure = publicProcedure
  .meta({ auth: 'sessionOrApiKey', control: true, rateLimit: 'backend' })
  .use(async ({ ctx, next }) => {
    const caller = await usageWriterOf(ctx.services, ctx.req);
    return next({ ctx: { ...ctx, caller } });
  });

const INGEST_DESCRIPTION =
  'Authorization: Bearer sk_live_... (an application secret key, or a tenant API key with usage.write), or a session with usage.write (add organization_slug). Body: one event { idempotencyKey, eventType, quantity? (default 1), occurredAt?, properties? } or { events: [...] } (1-1000). Deduplicated per organization by idempotencyKey: the same key with the same payload answers the original event with duplicate: true (200); with another payload, 409 idempotency_key_reused and nothing of the request is recorded. One event answers 201 { event, duplicate: false } (200 for a replay); a batch answers 200 { results: [{ event, duplicate }] } in request order.';

/** One new event answers 201; a replay (`duplicate: true`) and a batch answer 200. */
const NEW_EVENT = {
  when: (answer: TIngestUsageResponse) => 'duplicate' in answer && !answer.duplicate,
  otherwise:
    'A replay of one event (`{ event, duplicate: true }`: the same idempotencyKey and payload as a recorded event), or a batch (`{ results }`, in request order)',
};

/**
 * Reading usage needs usage.read in the organization: the `/tenants/{id}` routes' id, or
 * `organization_slug` (else the caller's own). Writing needs usage.write (USAGE_WRITE_ACCESS),
 * but an application secret key, not a control-plane principal, writes by its own rule (ingest.ts).
 */
const readById = { permission: 'usage.read', organization: 'id' } as const;
const readBySlug = { permission: 'usage.read', organization: 'slug' } as const;

export const usageRouter = router({
  events: router({
    create: usageWriterProcedure
      .meta({
        access: USAGE_WRITE_ACCESS,
        errors: ['application_disabled', 'forbidden', 'idempotency_key_reused', 'not_found'],
        openapi: {
          method: 'POST',
          path: '/usage/events',
          tags: ['usage'],
          summary: 'Record usage events (append-only, deduplicated by idempotencyKey)',
          description: INGEST_DESCRIPTION,
        },
        successStatus: 201,
        created: NEW_EVENT,
        // ingestUsage applies the subscription rule to the organization the access resolved.
        subscription: { organization: 'handler' },
      })
      .input(ZIngestUsageRequest)
      .use(resolveAccessOrOwnRule)
      .output(ZIngestUsageResponse)
      .mutation(({ ctx, input }) => ingestUsage(ctx.services, accessOr(ctx.access, ctx.caller, 'application'), input, 'usage')),
    list: controlProcedure
      .meta({
        access: readById,
        openapi: {
          method: 'GET',
          path: '/tenants/{id}/usage/events',
          tags: ['usage'],
          summary: "List an organization's usage events, newest occurredAt first",
          description:
            'Needs usage.read. Filters: event_type, from (inclusive) and to (exclusive) on occurredAt, idempotency_key. A cursor only continues the list (organization and filters) it came from.',
        },
      })
      .input(ZListUsageEventsRequest)
      .use(resolveAccess)
      .output(ZUsageEventPage)
      .query(({ ctx, input }) => listUsageEvents(ctx.services.db, ctx.access, input)),
  }),
  metering: router({
    create: usageWriterProcedure
      .meta({
        access: USAGE_WRITE_ACCESS,
        errors: ['forbidden', 'not_found'],
        openapi: {
          method: 'POST',
          path: '/usage-events',
          tags: ['usage'],
          summary: "Meter usage against the plan's monthly limits",
          description: `${INGEST_DESCRIPTION} Events count against the plan's usage limit of their type for the calendar month (UTC) of occurredAt: a request that would pass a limit answers 402 subscription_limit_exceeded and records nothing.`,
        },
        successStatus: 201,
        created: NEW_EVENT,
        // ingestUsage applies the subscription rule to the organization the access resolved.
        subscription: { organization: 'handler' },
      })
      .input(ZIngestUsageRequest)
      .use(resolveAccessOrOwnRule)
      .output(ZIngestUsageResponse)
      .mutation(({ ctx, input }) => ingestUsage(ctx.services, accessOr(ctx.access, ctx.caller, 'application'), input, 'metering')),
  }),
  summary: router({
    get: controlProcedure
      .meta({
        access: readById,
        openapi: {
          method: 'GET',
          path: '/tenants/{id}/usage/summary',
          tags: ['usage'],
          summary: 'Usage totals per event type over a range, in day or hour buckets',
          description:
            'Needs usage.read. from and to are whole hours (UTC), from <= hour < to; default: the current calendar month. bucket=day (at most 400 days) or hour (at most 31 days). Read from hourly totals: its cost does not grow with the number of events.',
        },
      })
      .input(ZUsageSummaryRequest)
      .use(resolveAccess)
      .output(ZUsageSummary)
      .query(({ ctx, input }) => getUsageSummary(ctx.services.db, ctx.access, input)),
  }),
  counters: router({
    get: controlProcedure
      .meta({
        access: readBySlug,
        openapi: {
          method: 'GET',
          path: '/usage',
          tags: ['usage'],
          summary: "This calendar month's usage against the plan's limits, and seats",
          description: "Needs usage.read. organization_slug selects the organization (default: the active workspace, or the API key's).",
        },
      })
      .input(ZUsageCountersRequest)
      .use(resolveAccess)
      .output(ZUsageCounters)
      .query(({ ctx }) => getUsageCounters(ctx.services.db, ctx.access)),
  }),
});

import {
  type TUpsertBillingMappingAnswer,
  ZBillingMappingPage,
  ZBillingProviderRecord,
  ZBillingProvidersAnswer,
  ZBillingSyncLog,
  ZBillingSyncLogPage,
  ZBillingSyncLogRef,
  ZConnectBillingRequest,
  ZCreateBillingProviderRequest,
  ZListBillingMappingsRequest,
  ZListBillingProvidersRequest,
  ZListBillingSyncLogsRequest,
  ZUpsertBillingMappingAnswer,
  ZUpsertBillingMappingRequest,
} from '@svc/contracts/billing';
import {
  connectProvider,
  createProvider,
  listMappings,
  listProviders,
  listSyncLogs,
  retrySyncLog,
  SYNC_LOG_RECORD,
  syncLogsOrganization,
  upsertMapping,
} from '../../modules/billing/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure, controlProcedureWithQuerySlug } from '../procedures.ts';

const tags = ['billing'];

const readById = { permission: 'billing.read', organization: 'id' } as const;
const manageById = { permission: 'billing.manage', organization: 'id', adminOnly: true } as const;
const read = { permission: 'billing.read', organization: 'slug' } as const;
const manage = { permission: 'billing.manage', organization: 'slug', adminOnly: true } as const;

/**
 * Billing handoff (docs/api.md "Billing handoff"): provider records, event-type mappings and sync logs. Reads need
 * billing.read, changes billing.manage (and, for a person, the org_admin role). Tenant API keys
 * with the scope may call every route. No answer carries a provider key.
 */
export const billingRouter = router({
  provider: router({
    list: controlProcedure
      .meta({
        access: readById,
        openapi: {
          method: 'GET',
          path: '/tenants/{id}/billing/providers',
          tags,
          summary: "List an organization's billing provider records and the adapters' status (configured, sandbox or live)",
        },
      })
      .input(ZListBillingProvidersRequest)
      .use(resolveAccess)
      .output(ZBillingProvidersAnswer)
      .query(({ ctx }) => listProviders(ctx.services.db, ctx.services.config.billing, ctx.access)),
    create: controlProcedure
      .meta({
        access: manageById,
        errors: ['billing_provider_exists'],
        openapi: { method: 'POST', path: '/tenants/{id}/billing/providers', tags, summary: 'Create a billing provider record' },
        successStatus: 201,
      })
      .input(ZCreateBillingProviderRequest)
      .use(resolveAccess)
      .output(ZBillingProviderRecord)
      .mutation(({ ctx, input }) => createProvider(ctx.services.db, ctx.services.config.billing, ctx.access, ctx.request, input)),
    connect: controlProcedure
      .meta({
        access: manage,
        errors: ['billing_mode_mismatch'],
        openapi: {
          method: 'POST',
          path: '/billing/connect/{provider}',
          tags,
          summary: "Connect a payment provider (stripe, razorpay or paddle): create or update the organization's record",
        },
      })
      .input(ZConnectBillingRequest)
      .use(resolveAccess)
      .output(ZBillingProviderRecord)
      .mutation(({ ctx, input }) => connectProvider(ctx.services.db, ctx.services.config.billing, ctx.access, ctx.request, input)),
  }),
  mapping: router({
    list: controlProcedure
      .meta({
        access: read,
        openapi: { method: 'GET', path: '/billing/mappings', tags, summary: "List an organization's usage-to-provider mappings" },
      })
      .input(ZListBillingMappingsRequest)
      .use(resolveAccess)
      .output(ZBillingMappingPage)
      .query(({ ctx, input }) => listMappings(ctx.services.db, ctx.access, input)),
    upsert: controlProcedure
      .meta({
        access: manage,
        openapi: {
          method: 'POST',
          path: '/billing/mappings',
          tags,
          summary: 'Map a usage event type to a provider item (posting the same provider and event type again re-points it)',
          description: 'Answers 201 when it created the mapping, 200 when it re-pointed an existing one (`created` says which).',
        },
        successStatus: 201,
        created: { when: (answer: TUpsertBillingMappingAnswer) => answer.created, otherwise: 'Changed an existing one (`created: false`)' },
      })
      .input(ZUpsertBillingMappingRequest)
      .use(resolveAccess)
      .output(ZUpsertBillingMappingAnswer)
      .mutation(({ ctx, input }) => upsertMapping(ctx.services.db, ctx.access, ctx.request, input)),
  }),
  syncLog: router({
    list: controlProcedure
      .meta({
        access: { permission: 'billing.read', organization: syncLogsOrganization },
        openapi: { method: 'GET', path: '/billing/sync-logs', tags, summary: 'List billing sync logs, filtered by status and provider' },
      })
      .input(ZListBillingSyncLogsRequest)
      .use(resolveAccess)
      .output(ZBillingSyncLogPage)
      .query(({ ctx, input }) => listSyncLogs(ctx.services.db, ctx.access, input)),
    retry: controlProcedureWithQuerySlug
      .meta({
        access: { permission: 'billing.manage', organization: SYNC_LOG_RECORD, adminOnly: true },
        errors: ['billing_sync_log_not_retryable'],
        openapi: {
          method: 'POST',
          path: '/billing/sync-logs/{id}/retry',
          tags,
          summary: 'Queue a failed or skipped sync log again (a fresh round of attempts)',
        },
      })
      .input(ZBillingSyncLogRef)
      .use(resolveAccess)
      .output(ZBillingSyncLog)
      .mutation(({ ctx, input }) => retrySyncLog(ctx.services.db, ctx.access, ctx.request, input)),
  }),
});

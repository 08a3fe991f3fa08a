import { z } from 'zod';
import { ZListQuery, ZPage, ZSlug } from './lists.ts';
import { ZUsageEventType } from './usage.ts';

// Billing handoff (docs/api.md "Billing handoff"). svc records which provider account an organization bills
// through, which provider item each usage event type maps to, and one sync log per usage event
// and mapping. It never charges, invoices, taxes or refunds: the providers do.
// Id shapes are written out (ids.ts draws random bytes at load; this module is also bundled into
// the console).

export const BILLING_PROVIDERS = ['stripe', 'razorpay', 'paddle'] as const;
export const ZBillingProvider = z.enum(BILLING_PROVIDERS).meta({ id: 'BillingProvider' });
export type TBillingProvider = z.infer<typeof ZBillingProvider>;

/** sandbox: the provider's test environment (no real money); live: real customers. */
export const ZBillingMode = z.enum(['sandbox', 'live']).meta({ id: 'BillingMode' });
export type TBillingMode = z.infer<typeof ZBillingMode>;

export const BILLING_SYNC_STATUSES = ['queued', 'succeeded', 'failed', 'skipped'] as const;
export const ZBillingSyncStatus = z.enum(BILLING_SYNC_STATUSES).meta({ id: 'BillingSyncStatus' });
export type TBillingSyncStatus = z.infer<typeof ZBillingSyncStatus>;

export const ZOrganizationIdRef = z.string().regex(/^ten_[0-9A-Za-z]{20}$/, 'expected an organization id (ten_...)');
export const ZBillingSyncLogId = z.string().regex(/^bsl_[0-9A-Za-z]{20}$/, 'expected a billing sync log id (bsl_...)');

const organizationSlug = ZSlug.optional().describe(
  "the organization; default: the session's active workspace or the API key's organization",
);

/**
 * The provider's id of the customer (Stripe `cus_...`) or subscription (Razorpay `sub_...`,
 * Paddle `sub_...`) that usage is recorded against. An identifier, never a key: values shaped
 * like a provider secret are refused.
 */
export const ZExternalAccountId = z
  .string()
  .trim()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'an id of printable characters, without spaces')
  .refine((v) => !/^(sk|rk)_(test|live)_|^rzp_(test|live)_|^pdl_(live|sdbx|test)_|^whsec_/.test(v), {
    message: 'this looks like an API key: give the customer or subscription id, never a key',
  });

/** A Stripe meter's event name, or a Razorpay item id (`item_...`), or a Paddle price id (`pri_...`). */
export const ZProviderItemId = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .regex(/^[\x21-\x7e]+$/, 'an id of printable characters, without spaces');

/** A usage event type, exactly as usage events carry it (a mapping for any other name could never match). */
export const ZBillingEventType = ZUsageEventType;

/** A handoff record: which account at which provider, in which mode. Never a key. */
export const ZBillingProviderRecord = z
  .object({
    id: z.string(),
    provider: ZBillingProvider,
    externalAccountId: z.string().nullable(),
    mode: ZBillingMode,
    /** connected: usage is synced; pending: the external account id is still missing. */
    status: z.enum(['connected', 'pending', 'disconnected']),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'BillingProviderRecord' });
export type TBillingProviderRecord = z.infer<typeof ZBillingProviderRecord>;

/**
 * What this svc installation can do with a provider, read from its environment only:
 * configured or not, and sandbox or live from the key's form (null: not configured, or a key
 * whose form does not tell). Never the key, nor any part of it.
 */
export const ZBillingAdapterStatus = z
  .object({ provider: ZBillingProvider, configured: z.boolean(), mode: ZBillingMode.nullable() })
  .meta({ id: 'BillingAdapterStatus' });
export type TBillingAdapterStatus = z.infer<typeof ZBillingAdapterStatus>;

/** GET /v1/tenants/{id}/billing/providers (docs/api.md). At most one record per provider: one page. */
export const ZBillingProvidersAnswer = z
  .object({ data: z.array(ZBillingProviderRecord), nextCursor: z.null(), adapters: z.array(ZBillingAdapterStatus) })
  .meta({ id: 'BillingProviders' });
export type TBillingProvidersAnswer = z.infer<typeof ZBillingProvidersAnswer>;

export const ZListBillingProvidersRequest = z.object({ id: ZOrganizationIdRef });
export type TListBillingProvidersRequest = z.infer<typeof ZListBillingProvidersRequest>;

/** The connect form (the console's, and the body of POST /v1/billing/connect/{provider} without the organization). */
export const ZConnectBillingBody = z.object({
  externalAccountId: ZExternalAccountId.optional(),
  /** Defaults to the mode of the configured key (sandbox when none is configured). */
  mode: ZBillingMode.optional(),
});
export type TConnectBillingBody = z.infer<typeof ZConnectBillingBody>;

/** The console's connect form: the body plus the provider of the path. */
export const ZConnectBillingForm = ZConnectBillingBody.extend({ provider: ZBillingProvider });
export type TConnectBillingForm = z.infer<typeof ZConnectBillingForm>;

/** POST /v1/tenants/{id}/billing/providers. */
export const ZCreateBillingProviderRequest = ZConnectBillingBody.extend({ id: ZOrganizationIdRef, provider: ZBillingProvider });
export type TCreateBillingProviderRequest = z.infer<typeof ZCreateBillingProviderRequest>;

/** POST /v1/billing/connect/{provider}. */
export const ZConnectBillingRequest = ZConnectBillingBody.extend({ provider: ZBillingProvider, organization_slug: organizationSlug });
export type TConnectBillingRequest = z.infer<typeof ZConnectBillingRequest>;

/** Usage event type -> provider item. */
export const ZBillingMapping = z
  .object({
    id: z.string(),
    provider: ZBillingProvider,
    eventType: z.string(),
    providerItemId: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'BillingMapping' });
export type TBillingMapping = z.infer<typeof ZBillingMapping>;

export const ZBillingMappingPage = ZPage(ZBillingMapping).meta({ id: 'BillingMappingPage' });
export type TBillingMappingPage = z.infer<typeof ZBillingMappingPage>;

/** The mapping form (the console's); POST /v1/billing/mappings adds the organization. */
export const ZBillingMappingBody = z.object({
  provider: ZBillingProvider,
  eventType: ZBillingEventType,
  providerItemId: ZProviderItemId,
});
export type TBillingMappingBody = z.infer<typeof ZBillingMappingBody>;

/** POST /v1/billing/mappings: one mapping per organization, provider and event type (posting again re-points it). */
export const ZUpsertBillingMappingRequest = ZBillingMappingBody.extend({ organization_slug: organizationSlug });
export type TUpsertBillingMappingRequest = z.infer<typeof ZUpsertBillingMappingRequest>;

export const ZUpsertBillingMappingAnswer = z
  .object({ mapping: ZBillingMapping, created: z.boolean() })
  .meta({ id: 'BillingMappingUpsert' });
export type TUpsertBillingMappingAnswer = z.infer<typeof ZUpsertBillingMappingAnswer>;

export const ZListBillingMappingsRequest = ZListQuery.extend({ organization_slug: organizationSlug });
export type TListBillingMappingsRequest = z.infer<typeof ZListBillingMappingsRequest>;

/** One usage event pushed (or not) through one mapping. `reason` is in svc's words, never a key. */
export const ZBillingSyncLog = z
  .object({
    id: z.string(),
    provider: ZBillingProvider,
    mappingId: z.string(),
    eventType: z.string(),
    providerItemId: z.string(),
    usageEventId: z.string(),
    status: ZBillingSyncStatus,
    /** Times the sync task took it up (a retry from the console or API starts again at 0). */
    attempts: z.number().int(),
    reason: z.string().nullable(),
    /** The provider's id of what it recorded (Stripe: the meter event identifier; Razorpay: the add-on). */
    providerRecordId: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'BillingSyncLog' });
export type TBillingSyncLog = z.infer<typeof ZBillingSyncLog>;

export const ZBillingSyncLogPage = ZPage(ZBillingSyncLog).meta({ id: 'BillingSyncLogPage' });
export type TBillingSyncLogPage = z.infer<typeof ZBillingSyncLogPage>;

/** The console's filters. */
export const ZBillingSyncLogFilters = z.object({
  status: ZBillingSyncStatus.optional(),
  provider: ZBillingProvider.optional(),
});
export type TBillingSyncLogFilters = z.infer<typeof ZBillingSyncLogFilters>;

/** GET /v1/billing/sync-logs?tenant_id= (or organization_slug, or the active workspace). */
export const ZListBillingSyncLogsRequest = ZListQuery.extend({
  tenant_id: ZOrganizationIdRef.optional(),
  organization_slug: organizationSlug,
  ...ZBillingSyncLogFilters.shape,
});
export type TListBillingSyncLogsRequest = z.infer<typeof ZListBillingSyncLogsRequest>;

/** POST /v1/billing/sync-logs/{id}/retry (`organization_slug` in the query or the body). */
export const ZBillingSyncLogRef = z.object({ id: ZBillingSyncLogId, organization_slug: organizationSlug });
export type TBillingSyncLogRef = z.infer<typeof ZBillingSyncLogRef>;

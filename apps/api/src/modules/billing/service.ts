import type {
  TBillingAdapterStatus,
  TBillingMapping,
  TBillingMappingPage,
  TBillingMode,
  TBillingProvider,
  TBillingProviderRecord,
  TBillingProvidersAnswer,
  TBillingSyncLog,
  TBillingSyncLogPage,
  TBillingSyncLogRef,
  TConnectBillingRequest,
  TCreateBillingProviderRequest,
  TListBillingMappingsRequest,
  TListBillingSyncLogsRequest,
  TUpsertBillingMappingAnswer,
  TUpsertBillingMappingRequest,
} from '@svc/contracts/billing';
import { AppError } from '@svc/contracts/errors';
import { newId } from '@svc/contracts/ids';
import type { Db } from '@svc/db/client';
import { decodeCursor, toPage } from '@svc/db/pagination';
import {
  type BillingMappingRow,
  type BillingProviderRow,
  type BillingSyncLogView,
  findBillingSyncLog,
  findBillingSyncLogTenant,
  insertBillingProvider,
  listBillingMappings,
  listBillingProviders,
  listBillingSyncLogs,
  requeueBillingSyncLog,
  upsertBillingMapping,
  upsertBillingProvider,
} from '@svc/db/queries/billing';
import { type BillingSettings, billingAdapterStatuses } from '@svc/jobs/billing/providers';
import { type RecordSource, recordIn } from '../access/access-rule.ts';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import type { Access, UntrustedOrganizationRef } from '../access/authorize.ts';

// Billing handoff (docs/api.md "Billing handoff"). Reads need billing.read; changes need billing.manage (and,
// for a person, the org_admin role). Nothing here holds or answers a provider key: adapter status
// is derived from the environment and says only configured / sandbox / live.

const SYNC_LOG_NOT_FOUND = 'billing sync log not found';

const iso = (at: Date): string => at.toISOString();

export function toBillingProviderRecord(row: BillingProviderRow): TBillingProviderRecord {
  return {
    id: row.id,
    provider: row.provider,
    externalAccountId: row.externalAccountId,
    mode: row.mode,
    status: row.status,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

export function toBillingMapping(row: BillingMappingRow): TBillingMapping {
  return {
    id: row.id,
    provider: row.provider,
    eventType: row.eventType,
    providerItemId: row.providerItemId,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

export function toBillingSyncLog(row: BillingSyncLogView): TBillingSyncLog {
  return {
    id: row.id,
    provider: row.provider,
    mappingId: row.mappingId,
    eventType: row.eventType,
    providerItemId: row.providerItemId,
    usageEventId: row.usageEventId,
    status: row.status,
    attempts: row.attempts,
    reason: row.reason,
    providerRecordId: row.providerRecordId,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

/** The adapters as the environment configures them: configured or not, sandbox or live. */
export function adapterStatuses(settings: BillingSettings): TBillingAdapterStatus[] {
  return billingAdapterStatuses(settings).map(({ provider, configured, mode }) => ({ provider, configured, mode }));
}

/**
 * The mode a connection gets: the one asked for, else the configured key's (sandbox without
 * one). Rule: when the provider's key is configured and its form tells its mode, a connection
 * must have that mode: a live connection on a test key (or the reverse) would send usage to the
 * wrong account, so it is refused with `billing_mode_mismatch`. Unconfigured providers (or keys
 * whose form does not tell) accept either mode: the record is only a handoff note until then, and
 * the sync task checks again before it sends anything.
 */
function modeFor(settings: BillingSettings, provider: TBillingProvider, requested: TBillingMode | undefined): TBillingMode {
  const adapter = adapterStatuses(settings).find((a) => a.provider === provider);
  const keyMode = adapter?.configured ? adapter.mode : null;
  if (requested !== undefined && keyMode !== null && requested !== keyMode) {
    throw new AppError(
      'billing_mode_mismatch',
      `the configured ${provider} key is a ${keyMode} key: a ${requested} connection would send usage to the wrong account`,
    );
  }
  return requested ?? keyMode ?? 'sandbox';
}

/** GET /v1/tenants/{id}/billing/providers: the organization's handoff records and the adapters' status. */
export async function listProviders(db: Db, settings: BillingSettings, { organization }: Access): Promise<TBillingProvidersAnswer> {
  const rows = await listBillingProviders(db, { tenantId: organization.id });
  return { data: rows.map(toBillingProviderRecord), nextCursor: null, adapters: adapterStatuses(settings) };
}

/** POST /v1/tenants/{id}/billing/providers: a new handoff record (409 when the provider has one: connect updates it). */
export async function createProvider(
  db: Db,
  settings: BillingSettings,
  access: Access,
  request: RequestMeta,
  input: TCreateBillingProviderRequest,
): Promise<TBillingProviderRecord> {
  const mode = modeFor(settings, input.provider, input.mode);
  return db.transaction(async (tx) => {
    const row = await insertBillingProvider(tx, {
      id: newId('billingProvider'),
      tenantId: access.organization.id,
      provider: input.provider,
      externalAccountId: input.externalAccountId ?? null,
      mode,
      status: input.externalAccountId ? 'connected' : 'pending',
    });
    if (!row) {
      throw new AppError(
        'billing_provider_exists',
        `the organization already has a ${input.provider} record: POST /v1/billing/connect/${input.provider} updates it`,
      );
    }
    await recordAudit(tx, access.principal, request, {
      tenantId: access.organization.id,
      action: 'billing_provider.created',
      target: { type: 'billing_provider', id: row.id },
      summary: { provider: row.provider, mode: row.mode, status: row.status, externalAccountId: row.externalAccountId },
    });
    return toBillingProviderRecord(row);
  });
}

/** POST /v1/billing/connect/{provider}: creates or updates the organization's record for the provider. */
export async function connectProvider(
  db: Db,
  settings: BillingSettings,
  access: Access,
  request: RequestMeta,
  input: TConnectBillingRequest,
): Promise<TBillingProviderRecord> {
  const mode = modeFor(settings, input.provider, input.mode);
  return db.transaction(async (tx) => {
    const { row, created } = await upsertBillingProvider(tx, {
      id: newId('billingProvider'),
      tenantId: access.organization.id,
      provider: input.provider,
      externalAccountId: input.externalAccountId,
      mode,
    });
    await recordAudit(tx, access.principal, request, {
      tenantId: access.organization.id,
      action: 'billing_provider.connected',
      target: { type: 'billing_provider', id: row.id },
      summary: { provider: row.provider, mode: row.mode, status: row.status, externalAccountId: row.externalAccountId, created },
    });
    return toBillingProviderRecord(row);
  });
}

/** POST /v1/billing/mappings: maps an event type to a provider item, or re-points the mapping. */
export async function upsertMapping(
  db: Db,
  access: Access,
  request: RequestMeta,
  input: TUpsertBillingMappingRequest,
): Promise<TUpsertBillingMappingAnswer> {
  return db.transaction(async (tx) => {
    const { row, created, previousItemId } = await upsertBillingMapping(tx, {
      id: newId('billingMapping'),
      tenantId: access.organization.id,
      provider: input.provider,
      eventType: input.eventType,
      providerItemId: input.providerItemId,
    });
    await recordAudit(tx, access.principal, request, {
      tenantId: access.organization.id,
      action: created ? 'billing_mapping.created' : 'billing_mapping.updated',
      target: { type: 'billing_mapping', id: row.id },
      summary: {
        provider: row.provider,
        eventType: row.eventType,
        providerItemId: row.providerItemId,
        ...(created ? {} : { previousProviderItemId: previousItemId }),
      },
    });
    return { mapping: toBillingMapping(row), created };
  });
}

/** GET /v1/billing/mappings. */
export async function listMappings(db: Db, { organization }: Access, input: TListBillingMappingsRequest): Promise<TBillingMappingPage> {
  const scope = `billing_mappings:${organization.id}`;
  const rows = await listBillingMappings(db, { tenantId: organization.id, limit: input.limit, cursor: decodeCursor(scope, input.cursor) });
  return toPage(scope, rows, input.limit, toBillingMapping);
}

/**
 * The organization GET /v1/billing/sync-logs names: `tenant_id` (docs/api.md), else
 * `organization_slug`, else the caller's.
 */
export function syncLogsOrganization(input: TListBillingSyncLogsRequest): UntrustedOrganizationRef {
  return input.tenant_id !== undefined ? { id: input.tenant_id } : { slug: input.organization_slug };
}

/**
 * GET /v1/billing/sync-logs?tenant_id=: the organization of `syncLogsOrganization`; `tenant_id`
 * and `organization_slug` both given must name the same one.
 */
export async function listSyncLogs(db: Db, { organization }: Access, input: TListBillingSyncLogsRequest): Promise<TBillingSyncLogPage> {
  if (input.tenant_id !== undefined && input.organization_slug !== undefined && input.organization_slug !== organization.slug) {
    throw new AppError('validation_failed', 'tenant_id and organization_slug name different organizations');
  }
  const scope = `billing_sync_logs:${organization.id}:${input.status ?? '*'}:${input.provider ?? '*'}`;
  const rows = await listBillingSyncLogs(db, {
    tenantId: organization.id,
    status: input.status,
    provider: input.provider,
    limit: input.limit,
    cursor: decodeCursor(scope, input.cursor),
  });
  return toPage(scope, rows, input.limit, toBillingSyncLog);
}

/** A sync log's `{id}` routes find their organization from the log (modules/access/access-rule.ts). */
export const SYNC_LOG_RECORD: RecordSource = { tenantOf: findBillingSyncLogTenant, notFound: SYNC_LOG_NOT_FOUND };

/**
 * POST /v1/billing/sync-logs/{id}/retry: a failed or skipped log goes back to the queue with a
 * fresh round of attempts, and the sync task is woken in the same transaction. A queued or
 * succeeded log is 409 billing_sync_log_not_retryable (a succeeded one would be recorded twice).
 */
export async function retrySyncLog(db: Db, access: Access, request: RequestMeta, input: TBillingSyncLogRef): Promise<TBillingSyncLog> {
  const log = await recordIn(db, access, findBillingSyncLog, input.id, SYNC_LOG_NOT_FOUND);
  const tenantId = access.organization.id;
  const notRetryable = (status: string) =>
    new AppError(
      'billing_sync_log_not_retryable',
      status === 'queued'
        ? 'this sync log is already queued: the sync task will send it'
        : `this sync log ${status === 'succeeded' ? 'succeeded' : `is ${status}`}: only a failed or skipped log can be retried`,
    );
  if (log.status !== 'failed' && log.status !== 'skipped') {
    throw notRetryable(log.status);
  }
  return db.transaction(async (tx) => {
    const row = await requeueBillingSyncLog(tx, { tenantId, id: log.id });
    if (!row) {
      const current = await findBillingSyncLog(tx, { tenantId, id: log.id });
      if (!current) {
        throw new AppError('not_found', SYNC_LOG_NOT_FOUND);
      }
      throw notRetryable(current.status);
    }
    await recordAudit(tx, access.principal, request, {
      tenantId,
      action: 'billing_sync_log.retried',
      target: { type: 'billing_sync_log', id: row.id },
      summary: {
        provider: row.provider,
        usageEventId: row.usageEventId,
        previousStatus: log.status,
        previousAttempts: log.attempts,
        previousReason: log.reason,
      },
    });
    return toBillingSyncLog({ ...row, eventType: log.eventType, providerItemId: log.providerItemId });
  });
}

import { zodResolver } from '@hookform/resolvers/zod';
import {
  BILLING_PROVIDERS,
  BILLING_SYNC_STATUSES,
  type TBillingMappingBody,
  type TBillingSyncLog,
  type TBillingSyncStatus,
  type TConnectBillingForm,
  ZBillingMappingBody,
  ZConnectBillingForm,
} from '@svc/contracts/billing';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { useSearchParams } from 'react-router';
import { focusField } from '../../components/empty-state.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { StatusFilter } from '../../components/status-filter.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;
/** The mapping form's event type field: the empty sync log list's button takes the admin here. */
const MAPPING_EVENT_TYPE_FIELD_ID = 'billing-mapping-event-type';
/** While a shown sync log is still queued, the list refreshes at this pace. */
const LIVE_REFRESH_MS = 2000;

const PROVIDER_LABEL = { stripe: 'Stripe', razorpay: 'Razorpay', paddle: 'Paddle' } as const;
const PROVIDER_SETTING = {
  stripe: 'STRIPE_SECRET_KEY',
  razorpay: 'RAZORPAY_KEY_ID and RAZORPAY_KEY_SECRET',
  paddle: 'PADDLE_API_KEY',
} as const;
const ITEM_HINT = { stripe: 'meter event name', razorpay: 'item id (item_…)', paddle: 'price id (pri_…)' } as const;
const ACCOUNT_HINT = { stripe: 'customer id (cus_…)', razorpay: 'subscription id (sub_…)', paddle: 'subscription id (sub_…)' } as const;

/** The options of a provider select (the connect and the mapping forms). */
function ProviderOptions() {
  return BILLING_PROVIDERS.map((p) => (
    <option key={p} value={p}>
      {PROVIDER_LABEL[p]}
    </option>
  ));
}

/** An empty select or input is "not given". */
const optional = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined);

/**
 * Billing handoff of the active organization: what this svc's environment configures for each
 * provider (never a key), the organization's connections (connect form), its event-type mappings
 * (create form), and the sync logs with a status filter and Retry for failed or skipped ones.
 * svc never charges: the providers do, from what it hands them.
 */
export function BillingPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const organization = active.organization;
  const providers = useQuery(
    trpc.billing.provider.list.queryOptions(
      { id: organization?.id ?? '' },
      { enabled: organization !== null && organization !== undefined },
    ),
  );

  return (
    <div data-testid="page-billing">
      <PageHeader
        title="Billing"
        description="Hand usage to your payment provider. svc records and syncs usage; the provider charges, invoices, taxes and refunds."
      />
      {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
      {providers.isError && (
        <ErrorPanel error={providers.error} title="Could not load the billing providers" onRetry={() => void providers.refetch()} />
      )}
      {(active.isLoading || providers.isPending) && !providers.isError && <p className="loading">Loading billing…</p>}
      {providers.data && organization && (
        <>
          <section className="panel" data-testid="billing-adapters" style={{ marginBottom: 16 }}>
            <h2 className="panel__title">Providers on this svc</h2>
            <p className="muted">Read from the server's environment: configured or not, and sandbox or live from the key's form.</p>
            <table className="data-table">
              <thead>
                <tr>
                  <th>Provider</th>
                  <th>Status</th>
                  <th>Mode</th>
                </tr>
              </thead>
              <tbody>
                {providers.data.adapters.map((a) => (
                  <tr
                    key={a.provider}
                    data-testid={`billing-adapter-${a.provider}`}
                    data-configured={a.configured}
                    data-mode={a.mode ?? ''}
                  >
                    <td>{PROVIDER_LABEL[a.provider]}</td>
                    <td>
                      {a.configured ? (
                        <span className="pill pill--on">configured</span>
                      ) : (
                        <span className="pill pill--off" title={`set ${PROVIDER_SETTING[a.provider]}`}>
                          not configured
                        </span>
                      )}
                    </td>
                    <td>{a.mode ?? <span className="muted">{a.configured ? 'unknown key form' : '—'}</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
          <Connections organizationSlug={organization.slug} records={providers.data.data} />
          <Mappings organizationSlug={organization.slug} />
          <SyncLogs organizationId={organization.id} organizationSlug={organization.slug} />
        </>
      )}
    </div>
  );
}

function Connections({
  organizationSlug,
  records,
}: {
  organizationSlug: string;
  records: { id: string; provider: keyof typeof PROVIDER_LABEL; externalAccountId: string | null; mode: string; status: string }[];
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const connect = useMutation(
    trpc.billing.provider.connect.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.billing.provider.pathKey() }),
    }),
  );
  const form = useForm<TConnectBillingForm>({ resolver: zodResolver(ZConnectBillingForm), defaultValues: { provider: 'stripe' } });
  const provider = form.watch('provider');
  const errors = form.formState.errors;
  const submit = form.handleSubmit(async (values) => {
    try {
      await connect.mutateAsync({ ...values, organization_slug: organizationSlug });
      form.reset({ provider: values.provider, externalAccountId: '', mode: undefined });
    } catch {
      // Shown below from the mutation's error.
    }
  });

  return (
    <section className="panel" data-testid="billing-connections" style={{ marginBottom: 16 }}>
      <h2 className="panel__title">Connections</h2>
      {records.length === 0 ? (
        <p className="muted" data-testid="billing-connections-empty">
          No provider connected yet.
        </p>
      ) : (
        <table className="data-table" data-testid="billing-connections-table">
          <thead>
            <tr>
              <th>Provider</th>
              <th>Account</th>
              <th>Mode</th>
              <th>Status</th>
            </tr>
          </thead>
          <tbody>
            {records.map((r) => (
              <tr key={r.id} data-testid="billing-connection" data-provider={r.provider} data-status={r.status}>
                <td>{PROVIDER_LABEL[r.provider]}</td>
                <td>{r.externalAccountId ? <code>{r.externalAccountId}</code> : <span className="muted">not set</span>}</td>
                <td data-testid="billing-connection-mode">{r.mode}</td>
                <td>
                  <span className={`pill ${r.status === 'connected' ? 'pill--on' : ''}`}>{r.status}</span>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form className="form-row" onSubmit={submit} noValidate data-testid="billing-connect-form">
        <label className="form-field">
          <span>Provider</span>
          <select data-testid="billing-connect-provider" {...form.register('provider')}>
            <ProviderOptions />
          </select>
        </label>
        <label className="form-field" style={{ flex: '2 1 260px' }}>
          <span>Account ({ACCOUNT_HINT[provider ?? 'stripe']})</span>
          <input data-testid="billing-connect-account" {...form.register('externalAccountId', { setValueAs: optional })} />
          {errors.externalAccountId && (
            <span className="form-field__error" data-testid="billing-connect-account-error">
              {errors.externalAccountId.message}
            </span>
          )}
        </label>
        <label className="form-field">
          <span>Mode</span>
          <select data-testid="billing-connect-mode" {...form.register('mode', { setValueAs: optional })}>
            <option value="">As the key</option>
            <option value="sandbox">sandbox</option>
            <option value="live">live</option>
          </select>
        </label>
        <button type="submit" className="button button--primary" disabled={connect.isPending} data-testid="billing-connect-submit">
          {connect.isPending ? 'Connecting…' : 'Connect'}
        </button>
      </form>
      {connect.isError && <ErrorPanel error={connect.error} title="Could not connect the provider" />}
    </section>
  );
}

function Mappings({ organizationSlug }: { organizationSlug: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const mappings = useQuery(trpc.billing.mapping.list.queryOptions({ organization_slug: organizationSlug, limit: 200 }));
  const upsert = useMutation(
    trpc.billing.mapping.upsert.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.billing.mapping.pathKey() }),
    }),
  );
  const form = useForm<TBillingMappingBody>({
    resolver: zodResolver(ZBillingMappingBody),
    defaultValues: { provider: 'stripe', eventType: '', providerItemId: '' },
  });
  const provider = form.watch('provider');
  const errors = form.formState.errors;
  const submit = form.handleSubmit(async (values) => {
    try {
      await upsert.mutateAsync({ ...values, organization_slug: organizationSlug });
      form.reset({ provider: values.provider, eventType: '', providerItemId: '' });
    } catch {
      // Shown below from the mutation's error.
    }
  });

  return (
    <section className="panel" data-testid="billing-mappings" style={{ marginBottom: 16 }}>
      <h2 className="panel__title">Mappings</h2>
      <p className="muted">Each usage event of a mapped type is synced to the provider item. Mapping the same type again re-points it.</p>
      {mappings.isError && (
        <ErrorPanel error={mappings.error} title="Could not load the mappings" onRetry={() => void mappings.refetch()} />
      )}
      {mappings.data &&
        (mappings.data.data.length === 0 ? (
          <p className="muted" data-testid="billing-mappings-empty">
            No mappings yet.
          </p>
        ) : (
          <table className="data-table" data-testid="billing-mappings-table">
            <thead>
              <tr>
                <th>Event type</th>
                <th>Provider</th>
                <th>Provider item</th>
              </tr>
            </thead>
            <tbody>
              {mappings.data.data.map((m) => (
                <tr key={m.id} data-testid="billing-mapping" data-provider={m.provider} data-event-type={m.eventType}>
                  <td>
                    <code>{m.eventType}</code>
                  </td>
                  <td>{PROVIDER_LABEL[m.provider]}</td>
                  <td>
                    <code data-testid="billing-mapping-item">{m.providerItemId}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
      <form className="form-row" onSubmit={submit} noValidate data-testid="billing-mapping-form">
        <label className="form-field">
          <span>Provider</span>
          <select data-testid="billing-mapping-provider" {...form.register('provider')}>
            <ProviderOptions />
          </select>
        </label>
        <label className="form-field">
          <span>Usage event type</span>
          <input
            id={MAPPING_EVENT_TYPE_FIELD_ID}
            placeholder="api.request"
            data-testid="billing-mapping-event-type"
            {...form.register('eventType')}
          />
          {errors.eventType && (
            <span className="form-field__error" data-testid="billing-mapping-event-type-error">
              {errors.eventType.message}
            </span>
          )}
        </label>
        <label className="form-field">
          <span>Provider item ({ITEM_HINT[provider ?? 'stripe']})</span>
          <input data-testid="billing-mapping-item-input" {...form.register('providerItemId')} />
          {errors.providerItemId && <span className="form-field__error">{errors.providerItemId.message}</span>}
        </label>
        <button type="submit" className="button button--primary" disabled={upsert.isPending} data-testid="billing-mapping-submit">
          {upsert.isPending ? 'Saving…' : 'Save mapping'}
        </button>
      </form>
      {upsert.isError && <ErrorPanel error={upsert.error} title="Could not save the mapping" />}
    </section>
  );
}

const isRetryable = (log: Pick<TBillingSyncLog, 'status'>) => log.status === 'failed' || log.status === 'skipped';

function SyncLogs({ organizationId, organizationSlug }: { organizationId: string; organizationSlug: string }) {
  const trpc = useTRPC();
  const pager = usePager();
  const [params, setParams] = useSearchParams();
  const status = (params.get('status') ?? undefined) as TBillingSyncStatus | undefined;
  const logs = useQuery({
    ...trpc.billing.syncLog.list.queryOptions({ tenant_id: organizationId, status, limit: PAGE_SIZE, cursor: pager.cursor }),
    placeholderData: keepPreviousData,
    refetchInterval: (query) => (query.state.data?.data.some((l) => l.status === 'queued') ? LIVE_REFRESH_MS : false),
  });
  const setStatus = (value: string) => {
    const next = new URLSearchParams(params);
    if (value) {
      next.set('status', value);
    } else {
      next.delete('status');
    }
    setParams(next);
    pager.reset();
  };

  return (
    <ListPage
      testId="billing-sync"
      noun="sync logs"
      title="Sync logs"
      tools={
        <div className="form-row">
          <StatusFilter
            testId="billing-sync-filter-status"
            anyLabel="Any status"
            options={BILLING_SYNC_STATUSES}
            value={status ?? ''}
            onChange={setStatus}
          />
          <button type="button" className="button" onClick={() => void logs.refetch()} data-testid="billing-sync-refresh">
            Refresh
          </button>
        </div>
      }
      query={logs}
      pager={pager}
      filtered={status ? { title: `No ${status} sync logs.`, clear: () => setStatus('') } : undefined}
      empty={{
        title: 'No sync logs yet.',
        next: 'Map a usage event type above: each mapped usage event is synced and appears here.',
        action: { label: 'Add a mapping', onClick: focusField(MAPPING_EVENT_TYPE_FIELD_ID) },
      }}
      columns={['Created', 'Provider', 'Event type', 'Usage event', 'Status', 'Attempts', 'Reason / provider record', 'Actions']}
      rowKey={(log) => log.id}
      row={(log) => <SyncLogRow log={log} organizationSlug={organizationSlug} />}
    />
  );
}

function SyncLogRow({ log, organizationSlug }: { log: TBillingSyncLog; organizationSlug: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const retry = useMutation(
    trpc.billing.syncLog.retry.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.billing.syncLog.pathKey() }),
    }),
  );
  const tone = log.status === 'succeeded' ? 'pill--on' : log.status === 'failed' ? 'pill--off' : '';
  return (
    <>
      <tr data-testid="billing-sync-row" data-sync-log-id={log.id} data-status={log.status}>
        <td>
          <time dateTime={log.createdAt} title={log.createdAt}>
            {new Date(log.createdAt).toLocaleString()}
          </time>
        </td>
        <td>{PROVIDER_LABEL[log.provider]}</td>
        <td>
          <code>{log.eventType}</code> <span className="muted">→ {log.providerItemId}</span>
        </td>
        <td>
          <code className="muted">{log.usageEventId}</code>
        </td>
        <td>
          <span className={`pill ${tone}`} data-testid="billing-sync-status">
            {log.status}
          </span>
        </td>
        <td data-testid="billing-sync-attempts">{log.attempts}</td>
        <td data-testid="billing-sync-reason">
          {log.reason ?? (log.providerRecordId ? <code>{log.providerRecordId}</code> : <span className="muted">—</span>)}
        </td>
        <td>
          {isRetryable(log) && (
            <button
              type="button"
              className="button button--primary"
              disabled={retry.isPending}
              onClick={() => retry.mutate({ id: log.id, organization_slug: organizationSlug })}
              data-testid="billing-sync-retry"
            >
              Retry
            </button>
          )}
        </td>
      </tr>
      {retry.isError && (
        <tr>
          <td colSpan={8}>
            <ErrorPanel error={retry.error} title="Could not retry the sync log" />
          </td>
        </tr>
      )}
    </>
  );
}

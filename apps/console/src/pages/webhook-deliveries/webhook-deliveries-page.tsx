import { TEST_EVENT_TYPE } from '@svc/contracts/events';
import {
  type TWebhookDelivery,
  type TWebhookDeliveryFilters,
  WEBHOOK_DELIVERY_STATUSES,
  WEBHOOK_EVENT_TYPE_CATALOG,
} from '@svc/contracts/webhooks';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useSearchParams } from 'react-router';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { Select, type SelectOption } from '../../components/select.tsx';
import { StatusFilter } from '../../components/status-filter.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;
/** While a shown delivery is still due, the list and the detail refresh at this pace. */
const LIVE_REFRESH_MS = 2000;

/** The no-filter option of a Select (whose values are never ''). */
const ANY = 'any';

const EVENT_TYPE_OPTIONS: SelectOption<string>[] = [
  { value: ANY, label: 'Any event type' },
  { value: TEST_EVENT_TYPE, label: TEST_EVENT_TYPE },
  ...WEBHOOK_EVENT_TYPE_CATALOG.map((t) => ({ value: t.type, label: t.type })),
];

const isDue = (d: Pick<TWebhookDelivery, 'status'>) => d.status === 'pending' || d.status === 'retrying';
const isRetryable = (d: Pick<TWebhookDelivery, 'status'>) => d.status === 'failed' || d.status === 'retrying';

/**
 * Webhook deliveries of the active organization: filters (kept in the URL, so the endpoints page
 * can link here), newest first with Previous / Next, one delivery's attempts and event, Retry
 * for a failed or retrying delivery, and Replay of its event to its endpoint (a new delivery,
 * labelled `replay`, shown once queued).
 */
export function WebhookDeliveriesPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const pager = usePager();
  const navigate = useNavigate();
  const [params, setParams] = useSearchParams();
  const filters: TWebhookDeliveryFilters = {
    endpoint_id: params.get('endpoint_id') ?? undefined,
    status: (params.get('status') ?? undefined) as TWebhookDeliveryFilters['status'],
    event_type: params.get('event_type') ?? undefined,
  };
  const selected = params.get('delivery');
  const organizationSlug = active.organization?.slug;

  const endpoints = useQuery(
    trpc.webhooks.endpoint.list.queryOptions(
      { organization_slug: organizationSlug, limit: 200 },
      { enabled: organizationSlug !== undefined },
    ),
  );
  const urlOf = new Map((endpoints.data?.data ?? []).map((e) => [e.id, e.url]));
  // The filter's endpoint stays an option before and after the list loads (its id until then),
  // so the select keeps showing it.
  const endpointOptions: SelectOption<string>[] = [
    { value: ANY, label: 'Any endpoint' },
    ...(endpoints.data?.data ?? []).map((e) => ({ value: e.id, label: e.url })),
  ];
  if (filters.endpoint_id && !urlOf.has(filters.endpoint_id)) {
    endpointOptions.push({ value: filters.endpoint_id, label: filters.endpoint_id });
  }
  const deliveries = useQuery({
    ...trpc.webhooks.delivery.list.queryOptions(
      { organization_slug: organizationSlug, ...filters, limit: PAGE_SIZE, cursor: pager.cursor },
      { enabled: organizationSlug !== undefined },
    ),
    placeholderData: keepPreviousData,
    refetchInterval: (query) => (query.state.data?.data.some(isDue) ? LIVE_REFRESH_MS : false),
  });

  const setSearch = (next: TWebhookDeliveryFilters & { delivery?: string | null }) => {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(next)) {
      if (typeof value === 'string' && value !== '') {
        search.set(key, value);
      }
    }
    setParams(search);
  };
  /** A filter applies as soon as it changes: the list starts again at its first page. */
  const narrow = (change: Partial<TWebhookDeliveryFilters>) => {
    setSearch({ ...filters, ...change });
    pager.reset();
  };
  const clear = () => {
    setSearch({});
    pager.reset();
  };
  const select = (id: string | null) => setSearch({ ...filters, delivery: id });
  const filtered = Object.values(filters).some((v) => v !== undefined);

  return (
    <div data-testid="page-webhook-deliveries">
      <PageHeader
        title="Webhook deliveries"
        description="Each event sent to each endpoint, with every attempt. Signing secrets never appear here."
      />
      <ListPage
        testId="deliveries"
        noun="deliveries"
        workspace={active}
        query={deliveries}
        pager={pager}
        filtered={filtered ? { title: 'No deliveries match these filters.', clear: clear } : undefined}
        empty={{
          title: 'No deliveries yet.',
          next: 'Each event svc sends to an endpoint appears here, with every attempt. Send a test event from the Webhooks page.',
          action: { label: 'Open Webhooks', onClick: () => void navigate('/webhooks') },
        }}
        above={(organization) => (
          <>
            <div className="form-row" data-testid="deliveries-filters">
              <div className="form-field">
                <label htmlFor="deliveries-filter-endpoint">Endpoint</label>
                <Select
                  id="deliveries-filter-endpoint"
                  value={filters.endpoint_id ?? ANY}
                  options={endpointOptions}
                  testId="deliveries-filter-endpoint"
                  onValueChange={(value) => narrow({ endpoint_id: value === ANY ? undefined : value })}
                />
              </div>
              <StatusFilter
                testId="deliveries-filter-status"
                anyLabel="Any status"
                options={WEBHOOK_DELIVERY_STATUSES}
                value={filters.status ?? ''}
                onChange={(value) => narrow({ status: value === '' ? undefined : value })}
              />
              <div className="form-field">
                <label htmlFor="deliveries-filter-event-type">Event type</label>
                <Select
                  id="deliveries-filter-event-type"
                  value={filters.event_type ?? ANY}
                  options={EVENT_TYPE_OPTIONS}
                  testId="deliveries-filter-event-type"
                  onValueChange={(value) => narrow({ event_type: value === ANY ? undefined : value })}
                />
              </div>
              <button type="button" className="button" onClick={clear} data-testid="deliveries-filter-clear">
                Clear
              </button>
              <button type="button" className="button" onClick={() => void deliveries.refetch()} data-testid="deliveries-refresh">
                Refresh
              </button>
            </div>
            {selected && (
              <DeliveryDetail
                id={selected}
                organizationSlug={organization.slug}
                endpointUrl={urlOf}
                onClose={() => select(null)}
                onReplayed={(id) => select(id)}
              />
            )}
          </>
        )}
        columns={['Created', 'Event type', 'Endpoint', 'Status', 'Attempts', 'Last answer', 'Next attempt', 'Actions']}
        rowKey={(delivery) => delivery.id}
        row={(delivery, organization) => (
          <DeliveryRow
            delivery={delivery}
            organizationSlug={organization.slug}
            endpointUrl={urlOf.get(delivery.endpointId)}
            selected={delivery.id === selected}
            onSelect={() => select(delivery.id)}
          />
        )}
      />
    </div>
  );
}

function When({ at, empty = '—' }: { at: string | null; empty?: string }) {
  return at ? (
    <time dateTime={at} title={at}>
      {new Date(at).toLocaleString()}
    </time>
  ) : (
    <span className="muted">{empty}</span>
  );
}

/** Marks a delivery a replay queued (beside the event's live delivery to the same endpoint). */
function ReplayPill() {
  return (
    <span className="pill" style={{ marginLeft: 6 }} title="queued by a replay" data-testid="delivery-replay">
      replay
    </span>
  );
}

/** Replay of one event to one endpoint: a new delivery, then shown instead of this one. */
function useReplay(onQueued: (deliveryId: string) => void) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return useMutation(
    trpc.webhooks.endpoint.replay.mutationOptions({
      onSuccess: async (res) => {
        await queryClient.invalidateQueries({ queryKey: trpc.webhooks.delivery.pathKey() });
        if (res.delivery) {
          onQueued(res.delivery.id);
        }
      },
    }),
  );
}

function DeliveryStatus({ status, testId }: { status: TWebhookDelivery['status']; testId: string }) {
  const tone = status === 'succeeded' ? 'pill--on' : status === 'failed' ? 'pill--off' : '';
  return (
    <span className={`pill ${tone}`} data-testid={testId}>
      {status}
    </span>
  );
}

/** Retry for a failed or retrying delivery; refreshes the list and the detail when it is accepted. */
function useRetry() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return useMutation(
    trpc.webhooks.delivery.retry.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.webhooks.delivery.pathKey() }),
    }),
  );
}

function DeliveryRow({
  delivery,
  organizationSlug,
  endpointUrl,
  selected,
  onSelect,
}: {
  delivery: TWebhookDelivery;
  organizationSlug: string;
  endpointUrl: string | undefined;
  selected: boolean;
  onSelect: () => void;
}) {
  const retry = useRetry();
  return (
    <>
      <tr
        data-testid="delivery-row"
        data-delivery-id={delivery.id}
        data-status={delivery.status}
        aria-selected={selected}
        style={selected ? { background: 'var(--surface-2, rgba(127,127,127,0.08))' } : undefined}
      >
        <td>
          <When at={delivery.createdAt} />
        </td>
        <td>
          <code data-testid="delivery-event-type">{delivery.eventType}</code>
          {delivery.replay && <ReplayPill />}
        </td>
        <td>
          <code style={{ wordBreak: 'break-all' }}>{endpointUrl ?? delivery.endpointId}</code>
        </td>
        <td>
          <DeliveryStatus status={delivery.status} testId="delivery-status" />
        </td>
        <td data-testid="delivery-attempts">{delivery.attemptCount}</td>
        <td data-testid="delivery-last">
          {delivery.lastOutcome ? (
            <>
              <code>{delivery.lastStatusCode ?? '—'}</code> <span className="muted">{delivery.lastOutcome}</span>
            </>
          ) : (
            <span className="muted">not attempted yet</span>
          )}
        </td>
        <td>
          <When at={delivery.nextAttemptAt} />
        </td>
        <td>
          <div style={{ display: 'flex', gap: 8 }}>
            <button type="button" className="button" onClick={onSelect} data-testid="delivery-open">
              Details
            </button>
            {isRetryable(delivery) && (
              <button
                type="button"
                className="button button--primary"
                disabled={retry.isPending}
                onClick={() => retry.mutate({ id: delivery.id, organization_slug: organizationSlug })}
                data-testid="delivery-retry"
              >
                Retry
              </button>
            )}
          </div>
        </td>
      </tr>
      {retry.isError && (
        <tr>
          <td colSpan={8}>
            <ErrorPanel error={retry.error} title="Could not retry the delivery" />
          </td>
        </tr>
      )}
    </>
  );
}

function DeliveryDetail({
  id,
  organizationSlug,
  endpointUrl,
  onClose,
  onReplayed,
}: {
  id: string;
  organizationSlug: string;
  endpointUrl: Map<string, string>;
  onClose: () => void;
  onReplayed: (deliveryId: string) => void;
}) {
  const trpc = useTRPC();
  const retry = useRetry();
  const replay = useReplay(onReplayed);
  const detail = useQuery({
    ...trpc.webhooks.delivery.get.queryOptions({ id, organization_slug: organizationSlug }),
    refetchInterval: (query) => (query.state.data && isDue(query.state.data) ? LIVE_REFRESH_MS : false),
  });
  const d = detail.data;

  return (
    <section className="panel" data-testid="delivery-detail" data-delivery-id={id} style={{ marginBottom: 16 }}>
      <div style={{ display: 'flex', justifyContent: 'space-between', alignItems: 'baseline', gap: 16 }}>
        <div>
          <h2 className="panel__title">Delivery</h2>
          <code className="muted">{id}</code>
        </div>
        <button type="button" className="button" onClick={onClose} data-testid="delivery-detail-close">
          Close
        </button>
      </div>
      {detail.isPending && <p className="loading">Loading the delivery…</p>}
      {detail.isError && <ErrorPanel error={detail.error} title="Could not load the delivery" onRetry={() => void detail.refetch()} />}
      {d && (
        <div style={{ display: 'grid', gap: 16 }}>
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <DeliveryStatus status={d.status} testId="delivery-detail-status" />
              {isRetryable(d) && (
                <button
                  type="button"
                  className="button button--primary"
                  style={{ marginLeft: 8 }}
                  disabled={retry.isPending}
                  onClick={() => retry.mutate({ id: d.id, organization_slug: organizationSlug })}
                  data-testid="delivery-detail-retry"
                >
                  Retry now
                </button>
              )}
            </dd>
            <dt>Event</dt>
            <dd>
              <code>{d.eventType}</code> <code className="muted">{d.eventId}</code> (the <code>webhook-id</code> header)
              {d.replay && <ReplayPill />}
              {d.eventType !== TEST_EVENT_TYPE && (
                <span style={{ marginLeft: 8 }}>
                  <ConfirmButton
                    tone="primary"
                    question={`Replay ${d.eventType} ${d.eventId} to ${endpointUrl.get(d.endpointId) ?? d.endpointId}?`}
                    consequence="A new delivery of this event is queued for this endpoint only, with the same webhook-id, whatever became of this one."
                    confirmLabel="Replay"
                    disabled={replay.isPending}
                    onConfirm={() =>
                      replay
                        .mutateAsync({ id: d.endpointId, organization_slug: organizationSlug, eventId: d.eventId })
                        .catch(() => undefined)
                    }
                    testId="delivery-replay-button"
                  >
                    Replay
                  </ConfirmButton>
                </span>
              )}
            </dd>
            <dt>Endpoint</dt>
            <dd>
              <code style={{ wordBreak: 'break-all' }}>{endpointUrl.get(d.endpointId) ?? d.endpointId}</code>
            </dd>
            <dt>Next attempt</dt>
            <dd>
              <When at={d.nextAttemptAt} empty={d.status === 'succeeded' ? 'none: delivered' : 'none'} />
            </dd>
            <dt>Delivered</dt>
            <dd>
              <When at={d.succeededAt} empty="not yet" />
            </dd>
          </dl>
          {retry.isError && <ErrorPanel error={retry.error} title="Could not retry the delivery" />}
          {replay.isError && <ErrorPanel error={replay.error} title="Could not replay the event" />}
          <div>
            <h3 style={{ margin: '0 0 8px' }}>Attempts</h3>
            {d.attempts.length === 0 ? (
              <p className="muted" data-testid="delivery-no-attempts">
                Not attempted yet.
              </p>
            ) : (
              <table className="data-table" data-testid="delivery-attempts-table">
                <thead>
                  <tr>
                    <th>#</th>
                    <th>Started</th>
                    <th>Duration</th>
                    <th>HTTP status</th>
                    <th>Outcome</th>
                    <th>Response excerpt</th>
                  </tr>
                </thead>
                <tbody>
                  {d.attempts.map((a) => (
                    <tr key={a.attemptNumber} data-testid="delivery-attempt" data-outcome={a.outcome}>
                      <td>{a.attemptNumber}</td>
                      <td>
                        <When at={a.startedAt} />
                      </td>
                      <td>{a.durationMs} ms</td>
                      <td data-testid="delivery-attempt-status">{a.statusCode ?? '—'}</td>
                      <td>
                        <code>{a.outcome}</code>
                        {a.error && <div className="muted">{a.error}</div>}
                      </td>
                      <td>
                        {a.responseExcerpt ? (
                          <code style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all' }}>{a.responseExcerpt}</code>
                        ) : (
                          <span className="muted">—</span>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </div>
          <div>
            <h3 style={{ margin: '0 0 8px' }}>Event data</h3>
            <pre style={{ margin: 0, overflowX: 'auto' }} data-testid="delivery-event-data">
              {JSON.stringify(d.event.data, null, 2)}
            </pre>
          </div>
        </div>
      )}
    </section>
  );
}

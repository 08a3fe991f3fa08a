import type { TUsageCounters, TUsageEvent } from '@svc/contracts/usage';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { useNavigate } from 'react-router';
import { columnHelper, whenColumn } from '../../components/data-table.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { Select, type SelectOption } from '../../components/select.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';
import { type Metric, UsageCharts } from './usage-charts.tsx';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * The chart's ranges: whole hours (the summary's rule), ending at the next hour boundary. A day
 * and less by the hour; a week and more by the day (168 hourly points of a week read as spikes,
 * seven daily bars as a trend).
 */
const RANGES = {
  '24h': { label: 'Last 24 hours', during: 'in the last 24 hours', bucket: 'hour', span: DAY },
  '7d': { label: 'Last 7 days', during: 'in the last 7 days', bucket: 'day', span: 7 * DAY },
  '30d': { label: 'Last 30 days', during: 'in the last 30 days', bucket: 'day', span: 30 * DAY },
  month: { label: 'This month', during: 'this month', bucket: 'day', span: 0 },
} as const;
type RangeKey = keyof typeof RANGES;
const RANGE_OPTIONS = Object.entries(RANGES).map(([value, r]) => ({ value: value as RangeKey, label: r.label }));
const METRIC_OPTIONS = [
  { value: 'quantity', label: 'Quantity' },
  { value: 'events', label: 'Events' },
] as const satisfies readonly SelectOption<Metric>[];

function rangeOf(key: RangeKey, now: number): { from: string; to: string; bucket: 'hour' | 'day' } {
  const range = RANGES[key];
  if (key === 'month') {
    const d = new Date(now);
    return {
      from: new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)).toISOString(),
      to: new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).toISOString(),
      bucket: 'day',
    };
  }
  const to = Math.ceil((now + 1) / HOUR) * HOUR;
  return { from: new Date(to - range.span).toISOString(), to: new Date(to).toISOString(), bucket: range.bucket };
}

const number = (n: number) => n.toLocaleString('en-US');

/**
 * Usage of the active organization: events over time per event type (a small chart per type of
 * the summary, GET /v1/tenants/{id}/usage/summary), this month's counters against the plan's limits
 * and seats (GET /v1/usage), and the latest events. A type at its limit is called out: POST
 * /v1/usage-events answers 402 subscription_limit_exceeded for it until the month ends.
 */
export function UsagePage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const organization = active.organization;
  const [rangeKey, setRangeKey] = useState<RangeKey>('7d');
  const [metric, setMetric] = useState<Metric>('quantity');
  // Fixed while the page is open, so the query key (and the cache) stays put between renders.
  const [now] = useState(() => Date.now());
  const range = rangeOf(rangeKey, now);
  const summary = useQuery({
    ...trpc.usage.summary.get.queryOptions({ id: organization?.id ?? '', ...range }, { enabled: organization !== null }),
    placeholderData: keepPreviousData,
  });
  const counters = useQuery(
    trpc.usage.counters.get.queryOptions({ organization_slug: organization?.slug }, { enabled: organization !== null }),
  );

  return (
    <div data-testid="page-usage">
      <PageHeader
        title="Usage"
        description={`Usage events of ${organization ? organization.name : 'this workspace'}, recorded with POST /v1/usage/events and POST /v1/usage-events, against the plan's monthly limits.`}
      />
      {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
      {counters.isError && (
        <ErrorPanel error={counters.error} title="Could not load the usage counters" onRetry={() => void counters.refetch()} />
      )}
      {counters.data && <Counters counters={counters.data} />}
      <section className="panel" data-testid="usage-chart-panel">
        <div
          style={{ display: 'flex', flexWrap: 'wrap', gap: 16, alignItems: 'flex-end', justifyContent: 'space-between', marginBottom: 12 }}
        >
          <h2 className="panel__title" style={{ margin: 0 }}>
            Events over time
          </h2>
          <div className="usage-toolbar">
            <Select aria-label="Range" testId="usage-range" value={rangeKey} onValueChange={setRangeKey} options={RANGE_OPTIONS} />
            <Select aria-label="Show" testId="usage-metric" value={metric} onValueChange={setMetric} options={METRIC_OPTIONS} />
          </div>
        </div>
        {summary.isError && (
          <ErrorPanel error={summary.error} title="Could not load the usage summary" onRetry={() => void summary.refetch()} />
        )}
        {summary.isPending && !summary.isError && <Skeleton label="Loading usage…" testId="usage-chart-loading" />}
        {summary.data && (
          <UsageCharts summary={summary.data} metric={metric} busy={summary.isPlaceholderData} during={RANGES[rangeKey].during} />
        )}
      </section>
      {organization && <RecentEvents organization={organization} />}
    </div>
  );
}

function Counters({ counters }: { counters: TUsageCounters }) {
  const reached = counters.usage.filter((u) => u.reached);
  const resets = counters.period.end.slice(0, 10);
  return (
    <>
      {reached.length > 0 && (
        <section className="error-panel" role="alert" data-testid="usage-limit-reached" style={{ marginBottom: 16 }}>
          <h2 className="error-panel__title">Usage limit reached</h2>
          <p className="error-panel__message">
            {reached.map((u) => u.eventType).join(', ')} {reached.length === 1 ? 'has' : 'have'} reached the plan's monthly limit: POST
            /v1/usage-events answers <strong>402</strong> <code>subscription_limit_exceeded</code> for{' '}
            {reached.length === 1 ? 'it' : 'them'} until {resets}, unless a platform admin moves the organization to a bigger plan.
          </p>
        </section>
      )}
      <div className="card-grid">
        <div className="card" data-testid="usage-plan">
          <p className="card__label">Plan</p>
          <p className="card__value">{counters.plan?.name ?? 'None'}</p>
          <p className="card__hint">
            {counters.status ?? 'no subscription'} · {counters.period.start.slice(0, 10)} to {resets}
          </p>
        </div>
        <div className="card" data-testid="usage-seats">
          <p className="card__label">Seats</p>
          <p className="card__value" data-testid="usage-seats-value">
            {counters.seats.used} / {counters.seats.limit ?? '∞'}
          </p>
          <p className="card__hint">members of the organization</p>
        </div>
      </div>
      <section className="panel" data-testid="usage-counters">
        <h2 className="panel__title">This month against the plan's limits</h2>
        {counters.usage.length === 0 ? (
          <p className="muted" data-testid="usage-counters-empty">
            No usage this month and no limits on the plan.
          </p>
        ) : (
          // A phone: the bars and thresholds scroll inside the panel instead of widening the page.
          // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region takes focus so a keyboard can scroll it (axe scrollable-region-focusable)
          <section className="table-scroll" tabIndex={0} aria-label="Usage against the plan's limits">
            <table className="data-table">
              <thead>
                <tr>
                  <th>Event type</th>
                  <th>Events</th>
                  <th>Quantity</th>
                  <th>Limit</th>
                  <th style={{ width: '30%' }}>Used</th>
                </tr>
              </thead>
              <tbody>
                {counters.usage.map((u) => {
                  const share = u.limit === null ? null : u.limit === 0 ? 1 : Math.min(1, u.quantity / u.limit);
                  return (
                    <tr key={u.eventType} data-testid="usage-counter-row" data-event-type={u.eventType} data-reached={u.reached}>
                      <td>
                        <code>{u.eventType}</code>
                      </td>
                      <td>{number(u.events)}</td>
                      <td data-testid="usage-counter-quantity">{number(u.quantity)}</td>
                      <td data-testid="usage-counter-limit">
                        {u.limit === null ? <span className="muted">unlimited</span> : number(u.limit)}
                      </td>
                      <td>
                        {share === null ? (
                          <span className="muted">—</span>
                        ) : (
                          <div style={{ display: 'flex', alignItems: 'center', gap: 8 }}>
                            <svg
                              className="usage-bar"
                              data-level={u.reached ? 'reached' : share >= 0.8 ? 'high' : 'ok'}
                              width="120"
                              height="10"
                              role="img"
                              aria-label={`${Math.round(share * 100)}% of the limit`}
                            >
                              <rect className="usage-bar__track" width="120" height="10" rx="5" />
                              <rect className="usage-bar__fill" width={120 * share} height="10" rx="5" />
                              {u.thresholds
                                .filter((t) => t.threshold < 100)
                                .map((t) => (
                                  <rect
                                    key={t.threshold}
                                    className="usage-bar__mark"
                                    x={(120 * t.threshold) / 100 - 0.5}
                                    width="1"
                                    height="10"
                                  />
                                ))}
                            </svg>
                            {u.reached ? (
                              <span className="pill pill--danger" data-testid="usage-counter-reached">
                                limit reached
                              </span>
                            ) : (
                              <span className="muted">{number(u.remaining ?? 0)} left</span>
                            )}
                          </div>
                        )}
                        {u.thresholds.length > 0 && <Thresholds thresholds={u.thresholds} />}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </section>
        )}
      </section>
    </>
  );
}

/** The plan's alert thresholds of one limit: reached ones with their date, the others with the quantity that reaches them. */
function Thresholds({ thresholds }: { thresholds: TUsageCounters['usage'][number]['thresholds'] }) {
  return (
    <ul
      className="muted"
      data-testid="usage-thresholds"
      style={{
        listStyle: 'none',
        padding: 0,
        margin: '4px 0 0',
        display: 'flex',
        flexWrap: 'wrap',
        columnGap: 10,
        fontSize: 12,
        whiteSpace: 'nowrap',
      }}
    >
      {thresholds.map((t) => (
        <li key={t.threshold} data-testid="usage-threshold" data-threshold={t.threshold} data-reached={t.reachedAt !== null}>
          {t.reachedAt !== null ? (
            <span title={`usage.threshold_reached recorded ${new Date(t.reachedAt).toLocaleString()}`}>
              ✓ {t.threshold}% on {new Date(t.reachedAt).toLocaleDateString(undefined, { month: 'short', day: 'numeric' })}
            </span>
          ) : (
            <span title={`usage.threshold_reached is recorded at ${number(t.quantity)}`}>
              {t.threshold}% at {number(t.quantity)}
            </span>
          )}
        </li>
      ))}
    </ul>
  );
}

/** A sender of usage events by id: the names of the organization's API keys and applications. */
function useSenderNames(organization: { id: string; slug: string }): Map<string, string> {
  const trpc = useTRPC();
  const keys = useQuery(trpc.apiKeys.list.queryOptions({ id: organization.id, limit: 200 }));
  const applications = useQuery(trpc.applications.list.queryOptions({ organization_slug: organization.slug, limit: 200 }));
  return useMemo(() => {
    const names = new Map<string, string>();
    for (const key of keys.data?.data ?? []) {
      names.set(key.id, key.name);
    }
    for (const application of applications.data?.data ?? []) {
      names.set(application.id, application.name);
    }
    return names;
  }, [keys.data, applications.data]);
}

const SENDER_KIND: Record<string, string> = { key: 'API key', app: 'application', usr: 'user' };

/** Who sent an event: the key's or application's name, its id under it (whole on hover, copyable). */
function Sender({ id, names }: { id: string | null; names: Map<string, string> }) {
  if (id === null) {
    return <span className="muted">—</span>;
  }
  const kind = SENDER_KIND[id.split('_')[0] ?? ''] ?? 'sender';
  const name = names.get(id);
  return (
    <span className="usage-sender" data-testid="usage-event-sender" data-source-id={id}>
      {name !== undefined && (
        <span className="usage-sender__name" title={`${kind} ${name}`}>
          {name}
        </span>
      )}
      <Identifier value={id} label={`${kind} id`} />
    </span>
  );
}

function usageEventColumns(names: Map<string, string>) {
  const column = columnHelper<TUsageEvent>();
  return column.columns([
    whenColumn(column, 'occurredAt', 'Occurred', { width: '10rem' }),
    column.accessor('eventType', {
      header: 'Event type',
      sortFn: 'text',
      cell: (info) => <Identifier value={info.getValue()} label="event type" copy={false} tail={10} />,
    }),
    column.accessor('quantity', {
      header: 'Quantity',
      meta: { width: '8.5rem', align: 'end' },
      cell: (info) => number(info.getValue()),
    }),
    column.accessor('idempotencyKey', {
      header: 'Idempotency key',
      enableSorting: false,
      meta: { width: '11rem' },
      cell: (info) => <Identifier value={info.getValue()} label="idempotency key" />,
    }),
    column.accessor('channel', {
      header: 'Route',
      sortFn: 'text',
      meta: { width: '12rem' },
      cell: (info) => <code className="usage-route">{info.getValue() === 'metering' ? '/v1/usage-events' : '/v1/usage/events'}</code>,
    }),
    column.accessor('sourceId', {
      header: 'Sent by',
      enableSorting: false,
      meta: { width: '13rem' },
      cell: (info) => <Sender id={info.getValue()} names={names} />,
    }),
  ]);
}

function RecentEvents({ organization }: { organization: { id: string; slug: string } }) {
  const trpc = useTRPC();
  const pager = usePager();
  const navigate = useNavigate();
  const names = useSenderNames(organization);
  const columns = useMemo(() => usageEventColumns(names), [names]);
  const events = useQuery({
    ...trpc.usage.events.list.queryOptions({ id: organization.id, limit: 20, cursor: pager.cursor }),
    placeholderData: keepPreviousData,
  });
  return (
    <ListPage
      testId="usage-events"
      noun="usage events"
      title="Latest events"
      query={events}
      pager={pager}
      empty={{
        title: 'No usage events yet.',
        next: (
          <>
            Send one with <code>POST /v1/usage/events</code> and a secret key.
          </>
        ),
        action: { label: 'Create an API key', onClick: () => void navigate('/api-keys') },
      }}
      rowKey={(e) => e.id}
      table={{
        columns,
        rowAttributes: (e) => ({ 'data-testid': 'usage-event-row', 'data-event-id': e.id }),
        minWidth: '66rem',
      }}
    />
  );
}

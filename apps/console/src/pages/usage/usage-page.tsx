import type { TUsageCounters, TUsageSummary } from '@svc/contracts/usage';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { useNavigate } from 'react-router';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The chart's ranges: whole hours (the summary's rule), ending at the next hour boundary. */
const RANGES = {
  '24h': { label: 'Last 24 hours', bucket: 'hour', span: DAY },
  '7d': { label: 'Last 7 days', bucket: 'hour', span: 7 * DAY },
  '30d': { label: 'Last 30 days', bucket: 'day', span: 30 * DAY },
  month: { label: 'This month', bucket: 'day', span: 0 },
} as const;
type RangeKey = keyof typeof RANGES;
type Metric = 'quantity' | 'events';

/** A colour per series, distinguishable on white and in greyscale screenshots. */
const PALETTE = ['#4263eb', '#e8590c', '#2f9e44', '#ae3ec9', '#1098ad', '#f08c00', '#c2255c', '#5c940d'];

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
 * Usage of the active organization: events over time per event type (a plain SVG chart of the
 * summary, GET /v1/tenants/{id}/usage/summary), this month's counters against the plan's limits
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
          <div className="form-row" style={{ margin: 0 }}>
            <label className="form-field">
              <span>Range</span>
              <select data-testid="usage-range" value={rangeKey} onChange={(e) => setRangeKey(e.target.value as RangeKey)}>
                {Object.entries(RANGES).map(([key, r]) => (
                  <option key={key} value={key}>
                    {r.label}
                  </option>
                ))}
              </select>
            </label>
            <label className="form-field">
              <span>Show</span>
              <select data-testid="usage-metric" value={metric} onChange={(e) => setMetric(e.target.value as Metric)}>
                <option value="quantity">Quantity</option>
                <option value="events">Events</option>
              </select>
            </label>
          </div>
        </div>
        {summary.isError && (
          <ErrorPanel error={summary.error} title="Could not load the usage summary" onRetry={() => void summary.refetch()} />
        )}
        {summary.isPending && !summary.isError && (
          <p className="loading" data-testid="usage-chart-loading">
            Loading usage…
          </p>
        )}
        {summary.data && <UsageChart summary={summary.data} metric={metric} busy={summary.isPlaceholderData} />}
      </section>
      {organization && <RecentEvents organizationId={organization.id} />}
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
                          <svg width="120" height="10" role="img" aria-label={`${Math.round(share * 100)}% of the limit`}>
                            <rect width="120" height="10" rx="5" fill="#e9ecef" />
                            <rect
                              width={120 * share}
                              height="10"
                              rx="5"
                              fill={u.reached ? '#e03131' : share >= 0.8 ? '#f08c00' : '#2f9e44'}
                            />
                            {u.thresholds
                              .filter((t) => t.threshold < 100)
                              .map((t) => (
                                <rect key={t.threshold} x={(120 * t.threshold) / 100 - 0.5} width="1" height="10" fill="#495057" />
                              ))}
                          </svg>
                          {u.reached ? (
                            <span className="pill pill--off" style={{ color: '#e03131' }} data-testid="usage-counter-reached">
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

const CHART = { width: 880, height: 260, left: 56, right: 16, top: 12, bottom: 36 };

/** One line per event type over every bucket of the range (empty buckets are 0), in plain SVG. */
function UsageChart({ summary, metric, busy }: { summary: TUsageSummary; metric: Metric; busy: boolean }) {
  const step = summary.bucket === 'hour' ? HOUR : DAY;
  const buckets = useMemo(() => {
    const out: number[] = [];
    const from = Date.parse(summary.from);
    const first = summary.bucket === 'day' ? Math.floor(from / DAY) * DAY : from;
    for (let t = first; t < Date.parse(summary.to); t += step) {
      out.push(t);
    }
    return out;
  }, [summary.from, summary.to, summary.bucket, step]);
  const series = summary.data.map((s, i) => {
    const byStart = new Map(s.points.map((p) => [Date.parse(p.start), p[metric]]));
    return {
      eventType: s.eventType,
      total: s[metric],
      color: PALETTE[i % PALETTE.length] as string,
      values: buckets.map((b) => byStart.get(b) ?? 0),
    };
  });
  if (series.length === 0) {
    return (
      <p className="muted" data-testid="usage-chart-empty">
        No usage in this range.
      </p>
    );
  }
  const max = Math.max(1, ...series.flatMap((s) => s.values));
  const plotW = CHART.width - CHART.left - CHART.right;
  const plotH = CHART.height - CHART.top - CHART.bottom;
  const x = (i: number) => CHART.left + (buckets.length <= 1 ? plotW / 2 : (i / (buckets.length - 1)) * plotW);
  const y = (v: number) => CHART.top + plotH - (v / max) * plotH;
  const ticks = [0, max / 2, max];
  const labelEvery = Math.max(1, Math.ceil(buckets.length / 8));
  const label = (t: number) =>
    summary.bucket === 'hour'
      ? new Date(t).toLocaleString('en-US', { month: 'short', day: 'numeric', hour: '2-digit', timeZone: 'UTC' })
      : new Date(t).toLocaleDateString('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' });
  return (
    <div aria-busy={busy} data-testid="usage-chart" data-bucket={summary.bucket} data-buckets={buckets.length}>
      <svg
        viewBox={`0 0 ${CHART.width} ${CHART.height}`}
        width="100%"
        role="img"
        aria-label={`${metric} per ${summary.bucket} and event type, ${summary.from} to ${summary.to} (UTC)`}
        style={{ maxWidth: CHART.width, display: 'block' }}
      >
        {ticks.map((t) => (
          <g key={t}>
            <line x1={CHART.left} x2={CHART.width - CHART.right} y1={y(t)} y2={y(t)} stroke="#e9ecef" />
            <text x={CHART.left - 8} y={y(t) + 4} textAnchor="end" fontSize="11" fill="#868e96">
              {number(Math.round(t))}
            </text>
          </g>
        ))}
        {buckets.map((b, i) =>
          i % labelEvery === 0 ? (
            <text key={b} x={x(i)} y={CHART.height - 12} textAnchor="middle" fontSize="11" fill="#868e96">
              {label(b)}
            </text>
          ) : null,
        )}
        {series.map((s) => (
          <g key={s.eventType} data-testid="usage-series" data-event-type={s.eventType} data-total={s.total}>
            <polyline
              fill="none"
              stroke={s.color}
              strokeWidth="2"
              strokeLinejoin="round"
              points={s.values.map((v, i) => `${x(i)},${y(v)}`).join(' ')}
            />
            {s.values.map((v, i) =>
              v > 0 ? (
                <circle key={buckets[i]} cx={x(i)} cy={y(v)} r="3" fill={s.color}>
                  <title>{`${s.eventType}: ${number(v)} (${label(buckets[i] as number)} UTC)`}</title>
                </circle>
              ) : null,
            )}
          </g>
        ))}
      </svg>
      <ul
        style={{ display: 'flex', flexWrap: 'wrap', gap: 16, listStyle: 'none', padding: 0, margin: '8px 0 0' }}
        data-testid="usage-legend"
      >
        {series.map((s) => (
          <li key={s.eventType} style={{ display: 'flex', alignItems: 'center', gap: 6 }}>
            <span style={{ width: 12, height: 12, borderRadius: 3, background: s.color, display: 'inline-block' }} />
            <code>{s.eventType}</code>
            <span className="muted" data-testid="usage-legend-total">
              {number(s.total)} {metric === 'quantity' ? 'units' : 'events'}
            </span>
          </li>
        ))}
      </ul>
    </div>
  );
}

function RecentEvents({ organizationId }: { organizationId: string }) {
  const trpc = useTRPC();
  const pager = usePager();
  const navigate = useNavigate();
  const events = useQuery({
    ...trpc.usage.events.list.queryOptions({ id: organizationId, limit: 20, cursor: pager.cursor }),
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
      columns={['Occurred (UTC)', 'Event type', 'Quantity', 'Idempotency key', 'Route', 'Sent by']}
      rowKey={(e) => e.id}
      row={(e) => (
        <tr data-testid="usage-event-row" data-event-id={e.id}>
          <td>
            <time dateTime={e.occurredAt}>{e.occurredAt.replace('T', ' ').slice(0, 19)}</time>
          </td>
          <td>
            <code>{e.eventType}</code>
          </td>
          <td>{number(e.quantity)}</td>
          <td>
            <code>{e.idempotencyKey}</code>
          </td>
          <td>{e.channel === 'metering' ? '/v1/usage-events' : '/v1/usage/events'}</td>
          <td>{e.sourceId ? <code>{e.sourceId}</code> : <span className="muted">—</span>}</td>
        </tr>
      )}
    />
  );
}

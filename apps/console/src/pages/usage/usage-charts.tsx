import type { TUsageSummary } from '@svc/contracts/usage';
import { useMemo } from 'react';
import { Area, AreaChart, Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export type Metric = 'quantity' | 'events';

const number = (n: number) => n.toLocaleString('en-US');
const compact = (n: number) => n.toLocaleString('en-US', { notation: 'compact', maximumFractionDigits: 1 });

/** Axis labels, all in UTC (the summary's buckets are UTC): "Nov 20" on day ticks, "14:00" on hour ticks. */
const dayLabel = (t: number) => new Date(t).toLocaleDateString('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' });
const hourLabel = (t: number) =>
  new Date(t).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZone: 'UTC' });
const bucketLabel = (t: number, bucket: 'hour' | 'day') => (bucket === 'hour' ? `${dayLabel(t)} ${hourLabel(t)}` : dayLabel(t));

/**
 * Ticks on calendar boundaries inside [from, to): every few hours for a range of a day or less,
 * otherwise midnights (UTC), spaced so that about six fit under a small chart.
 */
function calendarTicks(from: number, to: number): { ticks: number[]; format: (t: number) => string } {
  const span = to - from;
  if (span <= DAY) {
    const every = 4 * HOUR;
    const first = Math.ceil(from / every) * every;
    return { ticks: range(first, to, every), format: hourLabel };
  }
  const days = Math.ceil(span / DAY);
  const every = Math.max(1, Math.ceil(days / 6)) * DAY;
  return { ticks: range(Math.ceil(from / DAY) * DAY, to, every), format: dayLabel };
}

function range(first: number, end: number, step: number): number[] {
  const out: number[] = [];
  for (let t = first; t < end; t += step) {
    out.push(t);
  }
  return out;
}

/**
 * The summary as small multiples: one chart per event type, each on its own y axis so a type with
 * a few units is as readable as one with thousands. Every bucket of the range is plotted (empty
 * ones are 0); colours come from the theme tokens (styles.css, `.usage-chart`), so dark mode
 * follows. Each chart has an accessible name with its total and peak, and its non-empty buckets
 * as a visually hidden table. `during` words the range: "in the last 7 days".
 */
export function UsageCharts({ summary, metric, busy, during }: { summary: TUsageSummary; metric: Metric; busy: boolean; during: string }) {
  const from = Date.parse(summary.from);
  const to = Date.parse(summary.to);
  const step = summary.bucket === 'hour' ? HOUR : DAY;
  const buckets = useMemo(
    () => range(summary.bucket === 'day' ? Math.floor(from / DAY) * DAY : from, to, step),
    [from, to, step, summary.bucket],
  );
  const axis = calendarTicks(buckets[0] ?? from, to);
  if (summary.data.length === 0) {
    return (
      <p className="muted" data-testid="usage-chart-empty">
        No usage in this range.
      </p>
    );
  }
  return (
    <div className="usage-charts" aria-busy={busy} data-testid="usage-chart" data-bucket={summary.bucket} data-buckets={buckets.length}>
      {summary.data.map((s) => {
        const byStart = new Map(s.points.map((p) => [Date.parse(p.start), p[metric]]));
        const points = buckets.map((t) => ({ t, value: byStart.get(t) ?? 0 }));
        const nonEmpty = points.filter((p) => p.value > 0);
        const peak = nonEmpty.reduce<{ t: number; value: number } | null>(
          (best, p) => (best === null || p.value > best.value ? p : best),
          null,
        );
        const headingId = `usage-series-${s.eventType}`;
        const total = s[metric];
        const unit = metric === 'quantity' ? (total === 1 ? 'unit' : 'units') : total === 1 ? 'event' : 'events';
        const summaryLine = `${number(total)} ${unit} ${during}${
          peak ? `, peak ${number(peak.value)} on ${bucketLabel(peak.t, summary.bucket)} UTC` : ''
        }`;
        return (
          <figure key={s.eventType} className="usage-chart" data-testid="usage-series" data-event-type={s.eventType} data-total={s[metric]}>
            <figcaption className="usage-chart__caption">
              <code id={headingId}>{s.eventType}</code>
              <span className="muted" data-testid="usage-series-summary">
                {summaryLine}
              </span>
            </figcaption>
            <div className="usage-chart__plot" role="img" aria-label={`${s.eventType}: ${metric} per ${summary.bucket}, ${summaryLine}`}>
              <ResponsiveContainer width="100%" height={150}>
                {summary.bucket === 'day' ? (
                  // A bar a day: each day's total reads on its own, an empty day is a gap.
                  <BarChart data={points} margin={{ top: 8, right: 12, bottom: 0, left: 0 }} accessibilityLayer={false}>
                    <CartesianGrid vertical={false} />
                    <XAxis dataKey="t" type="category" ticks={axis.ticks} tickFormatter={axis.format} tickLine={false} minTickGap={8} />
                    <YAxis allowDecimals={false} tickFormatter={compact} width={44} tickLine={false} axisLine={false} />
                    <Tooltip
                      labelFormatter={(t) => `${bucketLabel(Number(t), summary.bucket)} UTC`}
                      formatter={(v) => [number(Number(v)), metric === 'quantity' ? 'Quantity' : 'Events']}
                      isAnimationActive={false}
                      cursor={{ fill: 'var(--surface-sunken)' }}
                      contentStyle={{ background: 'var(--surface)', borderColor: 'var(--border)', color: 'var(--text)' }}
                    />
                    <Bar dataKey="value" isAnimationActive={false} maxBarSize={48} />
                  </BarChart>
                ) : (
                  <AreaChart data={points} margin={{ top: 8, right: 12, bottom: 0, left: 0 }} accessibilityLayer={false}>
                    <CartesianGrid vertical={false} />
                    <XAxis
                      dataKey="t"
                      type="number"
                      scale="time"
                      domain={[buckets[0] ?? from, buckets[buckets.length - 1] ?? to]}
                      ticks={axis.ticks}
                      tickFormatter={axis.format}
                      tickLine={false}
                      minTickGap={8}
                    />
                    <YAxis allowDecimals={false} tickFormatter={compact} width={44} tickLine={false} axisLine={false} />
                    <Tooltip
                      labelFormatter={(t) => `${bucketLabel(Number(t), summary.bucket)} UTC`}
                      formatter={(v) => [number(Number(v)), metric === 'quantity' ? 'Quantity' : 'Events']}
                      isAnimationActive={false}
                      contentStyle={{ background: 'var(--surface)', borderColor: 'var(--border)', color: 'var(--text)' }}
                    />
                    <Area type="monotone" dataKey="value" isAnimationActive={false} dot={false} />
                  </AreaChart>
                )}
              </ResponsiveContainer>
            </div>
            {/* Hidden by a box around it: a table keeps its content's width whatever width it is given,
                and would widen a phone's page from behind its clip. */}
            <div className="sr-only">
              <table>
                <caption>{`${s.eventType}, ${metric} per ${summary.bucket} (UTC), buckets with usage`}</caption>
                <thead>
                  <tr>
                    <th scope="col">{summary.bucket === 'hour' ? 'Hour' : 'Day'}</th>
                    <th scope="col">{metric === 'quantity' ? 'Quantity' : 'Events'}</th>
                  </tr>
                </thead>
                <tbody>
                  {nonEmpty.map((p) => (
                    <tr key={p.t} data-testid="usage-point">
                      <td>{bucketLabel(p.t, summary.bucket)}</td>
                      <td>{number(p.value)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </figure>
        );
      })}
    </div>
  );
}

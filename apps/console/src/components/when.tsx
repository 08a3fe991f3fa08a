type WhenProps = {
  /** An ISO instant from the api, or null when there is none. */
  at: string | null;
  /** Said instead when `at` is null: "never", "—". */
  empty: string;
  /**
   * `relative` ("3 hours ago", "in 30 days") for table cells, where width is short and recency is
   * what matters; `datetime` (the default) where the exact moment is the point.
   */
  format?: 'relative' | 'datetime';
};

const DATE_TIME = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const RELATIVE = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

/**
 * Largest unit first, each said from its own threshold on: days up to three months ("in 30 days"
 * for a 30-day expiry, not "next month"), then months, then years.
 */
const UNITS: [Intl.RelativeTimeFormatUnit, number, number][] = [
  ['year', 365 * 24 * 3600_000, 365 * 24 * 3600_000],
  ['month', 30 * 24 * 3600_000, 90 * 24 * 3600_000],
  ['day', 24 * 3600_000, 24 * 3600_000],
  ['hour', 3600_000, 3600_000],
  ['minute', 60_000, 60_000],
];

/** "5 minutes ago", "in 30 days", "now": from the browser's clock, in its language; whole units, cut toward now. */
export function relativeTime(at: Date, now = Date.now()): string {
  const distance = at.getTime() - now;
  for (const [unit, size, from] of UNITS) {
    if (Math.abs(distance) >= from) {
      return RELATIVE.format(Math.trunc(distance / size), unit);
    }
  }
  return RELATIVE.format(0, 'second');
}

/**
 * A moment as a `<time>`: relative or local date and time on screen, the exact local date and time
 * on hover (title), the ISO instant in `dateTime` for machines.
 */
export function When({ at, empty, format = 'datetime' }: WhenProps) {
  if (!at) {
    return <span className="muted">{empty}</span>;
  }
  const date = new Date(at);
  return (
    <time dateTime={at} title={DATE_TIME.format(date)}>
      {format === 'relative' ? relativeTime(date) : DATE_TIME.format(date)}
    </time>
  );
}

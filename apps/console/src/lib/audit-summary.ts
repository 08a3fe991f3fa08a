/**
 * An audit entry's summary (docs/api.md "Audit log") as lines a person reads: one `name: value` a
 * field, a change as `from → to`, lists joined by commas, nothing as "none". The summary is
 * whatever the action recorded; these rules only shape it, they never drop a field.
 */
export type SummaryLine = { key: string; value: string };

type Json = unknown;

const isRecord = (value: Json): value is Record<string, Json> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** One value on one line: scalars as they are, lists by commas, a small object as `k: v, ...`. */
export function formatValue(value: Json): string {
  if (value === null || value === undefined) {
    return 'none';
  }
  if (typeof value === 'string') {
    return value === '' ? '""' : value;
  }
  if (typeof value === 'boolean') {
    return value ? 'yes' : 'no';
  }
  if (typeof value === 'number' || typeof value === 'bigint') {
    return String(value);
  }
  if (Array.isArray(value)) {
    return value.length === 0
      ? 'none'
      : value.map((v) => (isRecord(v) || Array.isArray(v) ? JSON.stringify(v) : formatValue(v))).join(', ');
  }
  if (isRecord(value)) {
    const change = changeOf(value);
    if (change !== undefined) {
      return change;
    }
    const entries = Object.entries(value);
    return entries.length === 0 ? 'none' : entries.map(([k, v]) => `${k}: ${isRecord(v) ? JSON.stringify(v) : formatValue(v)}`).join(', ');
  }
  return JSON.stringify(value);
}

/**
 * `{ from, to }` (or `{ before, after }`, as subscription changes are recorded) as `from → to`;
 * `{ added, removed }` as `added a, b; removed c`.
 */
function changeOf(value: Record<string, Json>): string | undefined {
  const keys = Object.keys(value);
  if (keys.length > 0 && keys.every((k) => k === 'from' || k === 'to')) {
    return `${formatValue(value.from)} → ${formatValue(value.to)}`;
  }
  if (keys.length > 0 && keys.every((k) => k === 'before' || k === 'after')) {
    return `${formatValue(value.before)} → ${formatValue(value.after)}`;
  }
  if (keys.length > 0 && keys.every((k) => k === 'added' || k === 'removed')) {
    const parts = [];
    if (Array.isArray(value.added) && value.added.length > 0) {
      parts.push(`added ${formatValue(value.added)}`);
    }
    if (Array.isArray(value.removed) && value.removed.length > 0) {
      parts.push(`removed ${formatValue(value.removed)}`);
    }
    return parts.length === 0 ? 'none' : parts.join('; ');
  }
  return undefined;
}

/**
 * The summary's lines: `changes` spread into a line per changed field (its new value, or
 * `from → to` where the entry kept both, in the change or in a `previous` beside it), then every
 * other field in the order recorded (`previous` only with what no change line showed).
 */
export function summaryLines(summary: Record<string, Json>): SummaryLine[] {
  const lines: SummaryLine[] = [];
  const previous = isRecord(summary.previous) ? summary.previous : {};
  const shownBefore = new Set<string>();
  for (const [key, value] of Object.entries(summary)) {
    if (key === 'changes' && isRecord(value)) {
      for (const [field, change] of Object.entries(value)) {
        if (change === undefined) {
          continue;
        }
        let line: string;
        if (isRecord(change) && changeOf(change) !== undefined) {
          line = formatValue(change);
        } else if (field in previous) {
          line = `${formatValue(previous[field])} → ${formatValue(change)}`;
          shownBefore.add(field);
        } else {
          line = `→ ${formatValue(change)}`;
        }
        lines.push({ key: field, value: line });
      }
      continue;
    }
    if (key === 'previous' && isRecord(value)) {
      const rest = Object.entries(value).filter(([field]) => !shownBefore.has(field));
      if (rest.length > 0) {
        lines.push({ key, value: formatValue(Object.fromEntries(rest)) });
      }
      continue;
    }
    lines.push({ key, value: formatValue(value) });
  }
  return lines;
}

/** A target's name, where the entry recorded one: its name, email, identifier, key or host. */
export function targetNameOf(summary: Record<string, Json>): string | undefined {
  for (const key of ['name', 'email', 'identifier', 'key', 'host']) {
    const value = summary[key];
    if (typeof value === 'string' && value !== '') {
      return value;
    }
  }
  const changes = summary.changes;
  if (isRecord(changes)) {
    const name = changes.name;
    if (typeof name === 'string' && name !== '') {
      return name;
    }
    if (isRecord(name) && typeof name.to === 'string') {
      return name.to;
    }
  }
  return undefined;
}

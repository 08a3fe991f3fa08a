import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';

/*
 * What an export contains, field by field. Each domain declares its sections beside its
 * queries (queries/<domain>.ts, `...ExportSection`), and queries/exports.ts lists them in the
 * export's order. Those declarations are the allowlist: a column that is not named in one never
 * leaves svc in an export, whatever is added to the tables later. Each section says what it
 * leaves out on purpose (secret hashes, ciphertexts, provider texts, claim columns).
 *
 * Every field is a SQL expression over the section's own table (alias `t`), so each row is
 * built by PostgreSQL as one JSON object (fields in this order) and reaches Node as text: a
 * download of millions of usage events parses nothing for JSON.
 * The SQL strings are constants of svc's source, never input.
 */

/** How a field is rendered: `number` cells are never formula-neutralised in CSV (they cannot hold text). */
export type ExportFieldKind = 'text' | 'number' | 'boolean' | 'time' | 'json';
export type ExportField = { name: string; kind: ExportFieldKind; sql: string };

/**
 * A resource of the export. `snapshot` sections are captured into the export record when it is
 * built (they are small: what admins create); `table` sections are read from their table at
 * download time, limited to rows created at or before the snapshot's `as_of` (usage events and
 * the audit log are append-only, so those are exact; the others show their state at download).
 */
export type ExportSection = {
  /** The JSON document's key (camelCase, plural for lists). */
  key: string;
  /** The CSV `resource` column (snake_case, singular). */
  resource: string;
  /** `one`: an object (or null) in JSON; `many`: an array. */
  shape: 'one' | 'many';
  source: 'snapshot' | 'table';
  from: string;
  /** The tenant predicate's column (compared with the organization id, as a parameter). */
  tenantColumn: string;
  /** `table` sections: the column compared with `as_of`. */
  asOfColumn?: string;
  /** A further predicate (static SQL). */
  where?: string;
  orderBy: string;
  fields: readonly ExportField[];
};

const time = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** Field builders: the field's name in the export, and its SQL over the section's table. */
export const exportField = {
  text: (name: string, column: string): ExportField => ({ name, kind: 'text', sql: column }),
  number: (name: string, column: string): ExportField => ({ name, kind: 'number', sql: column }),
  boolean: (name: string, column: string): ExportField => ({ name, kind: 'boolean', sql: column }),
  time: (name: string, column: string): ExportField => ({ name, kind: 'time', sql: time(column) }),
  json: (name: string, column: string): ExportField => ({ name, kind: 'json', sql: column }),
};

const dialect = new PgDialect();

/**
 * A domain's own SQL expression (a filter, a derivation), over the section's aliased tables
 * (drizzle `alias(table, 't')`), as the static SQL text a section holds: the export then applies
 * the rule the domain's queries apply, not a copy of it. The download runs through COPY, which
 * takes no bind parameters, so an expression that needs one is refused here.
 */
export function exportSqlText(expression: SQL): string {
  const query = dialect.sqlToQuery(expression);
  if (query.params.length > 0) {
    throw new Error('an export expression must not take parameters');
  }
  return query.sql;
}

import type { TExportFormat } from '@svc/contracts/exports';
import type { ExportField, ExportFieldKind, ExportSection } from '@svc/db/export-section';
import { EXPORT_SECTIONS, type ExportCopyRow } from '@svc/db/queries/exports';

/*
 * The two serializations of an export, as pure functions over one item at a time, so a download
 * writes as it reads and never holds more than a batch.
 *
 * JSON: one document, `{ "export": {...}, "organization": {...}, "subscription": {...} | null,
 * "members": [...], ..., "usageEvents": [...] }`, sections in EXPORT_SECTIONS order, one item
 * per line.
 *
 * CSV (RFC 4180): CRLF line ends, one header row, then one row per item. The columns are
 * `resource` (which resource the row is: `export`, `organization`, `member`, `usage_event`, ...),
 * `id`, then every other field of every resource, in order of first appearance: each row fills
 * its own resource's columns and leaves the others empty. Lists and objects (scopes, properties,
 * summary, ...) are JSON text in their cell; null is an empty cell. A text cell starting with
 * `=`, `+`, `-`, `@`, tab or carriage return gets a leading `'` so a spreadsheet shows it as
 * text rather than running it as a formula (OWASP "CSV injection"); numbers are never altered.
 */

/** The `export` row / object: what this file is, and the counts recorded when it was built. */
export const EXPORT_HEADER_FIELDS: readonly ExportField[] = [
  { name: 'id', kind: 'text', sql: '' },
  { name: 'organizationId', kind: 'text', sql: '' },
  { name: 'version', kind: 'number', sql: '' },
  { name: 'asOf', kind: 'time', sql: '' },
  { name: 'createdAt', kind: 'time', sql: '' },
  { name: 'completedAt', kind: 'time', sql: '' },
  { name: 'counts', kind: 'json', sql: '' },
];

/** Bumped when a field's meaning changes (adding a resource or a field does not). */
export const EXPORT_DOCUMENT_VERSION = 1;

type Layout = { resource: string; fields: readonly ExportField[]; columns: number[] };

/** Every column of the CSV: `resource`, `id`, then each other field name once, by first appearance. */
export const CSV_COLUMNS: readonly string[] = (() => {
  const names = ['resource', 'id'];
  for (const fields of [EXPORT_HEADER_FIELDS, ...EXPORT_SECTIONS.map((s) => s.fields)]) {
    for (const field of fields) {
      if (!names.includes(field.name)) {
        names.push(field.name);
      }
    }
  }
  return names;
})();

function layoutOf(resource: string, fields: readonly ExportField[]): Layout {
  return { resource, fields, columns: fields.map((field) => CSV_COLUMNS.indexOf(field.name)) };
}

const HEADER_LAYOUT = layoutOf('export', EXPORT_HEADER_FIELDS);
const LAYOUTS = new Map<ExportSection, Layout>(EXPORT_SECTIONS.map((s) => [s, layoutOf(s.resource, s.fields)]));

const NEEDS_QUOTES = /[",\r\n]/;
/** What spreadsheets read as the start of a formula (OWASP: = + - @ tab CR). */
const FORMULA_START = /^[=+\-@\t\r]/;

/** One CSV cell, neutralised and quoted as needed. */
export function csvCell(value: unknown, kind: ExportFieldKind): string {
  if (value === null || value === undefined) {
    return '';
  }
  let text: string;
  if (typeof value === 'string') {
    text = kind !== 'number' && FORMULA_START.test(value) ? `'${value}` : value;
  } else if (typeof value === 'object') {
    text = JSON.stringify(value);
  } else {
    text = String(value);
  }
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function csvLine(layout: Layout, item: Record<string, unknown>): string {
  const cells = new Array<string>(CSV_COLUMNS.length).fill('');
  cells[0] = layout.resource;
  for (let i = 0; i < layout.fields.length; i++) {
    const field = layout.fields[i] as ExportField;
    cells[layout.columns[i] as number] = csvCell(item[field.name], field.kind);
  }
  return `${cells.join(',')}\r\n`;
}

/** The item with exactly the section's fields, in order: nothing else is ever written. */
function pick(fields: readonly ExportField[], item: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of fields) {
    out[field.name] = item[field.name] ?? null;
  }
  return out;
}

/** The `export` object of a download. */
export type ExportHeader = {
  id: string;
  organizationId: string;
  asOf: string;
  createdAt: string;
  completedAt: string | null;
  counts: Record<string, number>;
};

/**
 * The text around the items of an export, and the captured items themselves. Sections come in
 * EXPORT_SECTIONS order. A table section's rows arrive as bytes PostgreSQL rendered (a JSON
 * object, or a whole CSV line: queries/exports.ts exportSectionCopySql, with this file's
 * CSV_COLUMNS and the same cell rules); only `rowPrefix` goes before each.
 */
export type ExportSerializer = {
  begin: (header: ExportHeader) => string;
  sectionStart: (section: ExportSection) => string;
  /** A captured item (an object from the snapshot). */
  item: (section: ExportSection, item: Record<string, unknown>, first: boolean) => string;
  /** What precedes a table row's bytes (JSON: the separator; CSV: nothing, the line is whole). */
  rowPrefix: (section: ExportSection, first: boolean) => string;
  /** Ends a section; `empty` when no item was written (a `one` section is then null). */
  sectionEnd: (section: ExportSection, empty: boolean) => string;
  end: () => string;
};

const jsonSerializer: ExportSerializer = {
  begin: (header) => `{"export":${JSON.stringify({ ...pick(EXPORT_HEADER_FIELDS, { ...header, version: EXPORT_DOCUMENT_VERSION }) })}`,
  sectionStart: (section) => `,\n${JSON.stringify(section.key)}:${section.shape === 'many' ? '[' : ''}`,
  item: (section, item, first) => {
    const json = JSON.stringify(pick(section.fields, item));
    return section.shape === 'many' ? `${first ? '\n' : ',\n'}${json}` : first ? json : '';
  },
  rowPrefix: (_section, first) => (first ? '\n' : ',\n'),
  sectionEnd: (section, empty) => (section.shape === 'many' ? (empty ? ']' : '\n]') : empty ? 'null' : ''),
  end: () => '}\n',
};

const csvSerializer: ExportSerializer = {
  begin: (header) => `${CSV_COLUMNS.join(',')}\r\n${csvLine(HEADER_LAYOUT, { ...header, version: EXPORT_DOCUMENT_VERSION })}`,
  sectionStart: () => '',
  item: (section, item) => csvLine(LAYOUTS.get(section) as Layout, item),
  rowPrefix: () => '',
  sectionEnd: () => '',
  end: () => '',
};

/**
 * Each export format, in one place: how its document is written (`serializer`), the `Content-Type`
 * of its download, and how COPY writes a table section's rows for it (`copyRow`).
 */
export const EXPORT_FORMATS: Record<TExportFormat, { serializer: ExportSerializer; contentType: string; copyRow: ExportCopyRow }> = {
  json: { serializer: jsonSerializer, contentType: 'application/json; charset=utf-8', copyRow: { format: 'json' } },
  csv: {
    serializer: csvSerializer,
    contentType: 'text/csv; charset=utf-8; header=present',
    copyRow: { format: 'csv', columns: CSV_COLUMNS },
  },
};

/** A filename made of safe characters only (slugs and ids are already; this is the guarantee). */
export function downloadFilename(opts: { slug: string; id: string; format: TExportFormat }): string {
  return `svc-export-${opts.slug}-${opts.id}.${opts.format}`.replace(/[^A-Za-z0-9._-]/g, '_');
}

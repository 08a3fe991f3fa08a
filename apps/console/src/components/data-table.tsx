import {
  type ColumnDef,
  type ColumnHelper,
  createColumnHelper,
  createSortedRowModel,
  type RowData,
  rowSortingFeature,
  sortFn_alphanumeric,
  sortFn_basic,
  sortFn_datetime,
  sortFn_text,
  tableFeatures,
  useTable,
} from '@tanstack/react-table';

export type { RowData };

import type { CSSProperties, ReactNode } from 'react';
import { When } from './when.tsx';

/** What a column says about its cells besides the data (`meta` in a column definition). */
export type DataTableColumnMeta = {
  /**
   * The column's width (a CSS length: '8rem', '15%'). Columns without one share what is left, so
   * leave it off the column that matters most (the name). Cells cut with an ellipsis at it.
   */
  width?: string;
  /** Numbers and the row actions column: aligned to the end. */
  align?: 'end';
  /** The heading's tooltip: what the column means ("Recorded within about a minute of use"). */
  description?: string;
};

/** The features every console table has: client-side sorting of the page on screen. */
export const dataTableFeatures = tableFeatures({
  rowSortingFeature,
  sortedRowModel: createSortedRowModel(),
  sortFns: { alphanumeric: sortFn_alphanumeric, basic: sortFn_basic, datetime: sortFn_datetime, text: sortFn_text },
  columnMeta: {} as DataTableColumnMeta,
});

/** One column of a DataTable of TRow rows (build them with `columnHelper<TRow>()`). */
// biome-ignore lint/suspicious/noExplicitAny: each column has its own value type; a list of them can only say "any" (TanStack's own `columns()` helper does the same)
export type DataTableColumn<TRow extends RowData> = ColumnDef<typeof dataTableFeatures, TRow, any>;

/**
 * Typed column definitions for rows of TRow, defined once at module scope:
 * `const column = columnHelper<TApiKey>(); const columns = column.columns([column.accessor('name', { header: 'Name' })])`.
 */
export function columnHelper<TRow extends RowData>() {
  return createColumnHelper<typeof dataTableFeatures, TRow>();
}

/** What `columnHelper<TRow>()` returns: the helpers below take it to know the row type. */
export type DataTableColumnHelper<TRow extends RowData> = ColumnHelper<typeof dataTableFeatures, TRow>;

/** The fields of TRow that hold an ISO instant from the api, or nothing. */
type InstantKey<TRow> = {
  [K in keyof TRow]-?: TRow[K] extends string | null | undefined ? K : never;
}[keyof TRow] &
  string;

type WhenColumnOptions<TRow> = {
  /** The column's width; 9rem unless given ("12 minutes ago" whole, beside the sort arrow). */
  width?: string;
  /** The heading's tooltip. */
  description?: string;
  /** Said when there is no moment: '—' unless given ("never", "not yet"), or from the row. */
  empty?: string | ((row: TRow) => string);
  /**
   * The moment shown when it is not always the value sorted on: an invitation's expiry once it is
   * accepted, a revoked key's expiry (return null to show `empty`).
   */
  shown?: (row: TRow, at: string | null) => string | null;
  /** Wraps the time in a span with this test id. */
  testId?: string;
};

/**
 * A sortable timestamp column, shown as a relative `When` ("3 hours ago", the exact time on hover):
 * `whenColumn(column, 'createdAt', 'Created')`. `key` is a field of the row holding an instant, or
 * `{ id, at }` for one worked out from the row.
 */
export function whenColumn<TRow extends RowData>(
  column: DataTableColumnHelper<TRow>,
  key: NoInfer<InstantKey<TRow> | { id: string; at: (row: TRow) => string | null }>,
  header: string,
  { width = '9rem', description, empty = '—', shown, testId }: WhenColumnOptions<TRow> = {},
): DataTableColumn<TRow> {
  const { id, at } = typeof key === 'string' ? { id: key, at: (row: TRow) => row[key] as string | null | undefined } : key;
  return column.accessor(at, {
    id,
    header,
    sortFn: 'text',
    meta: { width, description },
    cell: (info) => {
      const row = info.row.original;
      const value = info.getValue() ?? null;
      const time = (
        <When at={shown ? shown(row, value) : value} empty={typeof empty === 'function' ? empty(row) : empty} format="relative" />
      );
      return testId ? <span data-testid={testId}>{time}</span> : time;
    },
  });
}

/**
 * The last column: the row's actions (a `RowActions` menu, or nothing for a row with none) under
 * a heading only screen readers hear. `cell` draws them from the row.
 */
export function actionsColumn<TRow extends RowData>(
  column: DataTableColumnHelper<TRow>,
  cell: (row: TRow) => ReactNode,
  { width = '3.5rem' }: { width?: string } = {},
): DataTableColumn<TRow> {
  return column.display({
    id: 'actions',
    header: () => <span className="sr-only">Actions</span>,
    meta: { width, align: 'end' },
    cell: (info) => cell(info.row.original),
  });
}

export type DataTableProps<TRow extends RowData> = {
  /** Keep them stable (module scope or useMemo): new definitions rebuild the table. */
  columns: DataTableColumn<TRow>[];
  data: TRow[];
  /** Each row's identity: React key and TanStack row id. */
  rowId: (row: TRow) => string;
  /** Attributes on each `<tr>`: `data-testid`, `data-status`, ... (tests and styling find rows by them). */
  rowAttributes?: (row: TRow) => Record<`data-${string}`, string | undefined>;
  /** An accessible name for the table when the panel's heading does not already give one. */
  label?: string;
  /** While a newer page loads, the rows shown dim and the table says it is busy. */
  busy?: boolean;
  /**
   * Narrower than this, the table scrolls sideways inside its panel instead of squeezing its
   * columns (a phone); about the sum of the column widths plus room for the unsized ones. 40rem by default.
   */
  minWidth?: string;
  testId?: string;
};

const ARIA_SORT = { asc: 'ascending', desc: 'descending' } as const;
const SORT_ICON = { asc: '▲', desc: '▼' } as const;

/**
 * A table on TanStack Table: headers of sortable columns are buttons (sorting the rows on screen;
 * the third click returns to the server's order) and carry `aria-sort`. The layout is fixed: the
 * table fills its panel, columns take their `meta.width`, and every cell stays on one line and ends
 * in an ellipsis instead of overflowing. Below `minWidth` (a phone) it scrolls sideways inside its
 * panel.
 */
export function DataTable<TRow extends RowData>({
  columns,
  data,
  rowId,
  rowAttributes,
  label,
  busy = false,
  minWidth,
  testId,
}: DataTableProps<TRow>) {
  const table = useTable({
    features: dataTableFeatures,
    columns,
    data,
    getRowId: (row) => rowId(row),
  });
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region takes focus so a keyboard can scroll a table wider than a phone (axe scrollable-region-focusable)
    <section className="table-scroll" tabIndex={0} aria-label={label ?? 'Table'}>
      <table
        className="data-table data-table--fixed"
        data-testid={testId}
        aria-busy={busy}
        aria-label={label}
        style={minWidth ? ({ '--table-min-width': minWidth } as CSSProperties) : undefined}
      >
        <colgroup>
          {table.getAllLeafColumns().map((column) => (
            <col key={column.id} style={column.columnDef.meta?.width ? { width: column.columnDef.meta.width } : undefined} />
          ))}
        </colgroup>
        <thead>
          {table.getHeaderGroups().map((group) => (
            <tr key={group.id}>
              {group.headers.map((header) => {
                const meta = header.column.columnDef.meta;
                const sorted = header.column.getIsSorted();
                const canSort = header.column.getCanSort();
                return (
                  <th
                    key={header.id}
                    className={header.column.id === 'actions' ? 'data-table__actions' : undefined}
                    scope="col"
                    title={meta?.description}
                    aria-sort={canSort ? (sorted ? ARIA_SORT[sorted] : 'none') : undefined}
                    style={meta?.align === 'end' ? { textAlign: 'right' } : undefined}
                  >
                    {header.isPlaceholder ? null : canSort ? (
                      <button type="button" className="sort-button" onClick={header.column.getToggleSortingHandler()}>
                        <table.FlexRender header={header} />
                        <span className="sort-button__icon" aria-hidden="true">
                          {sorted ? SORT_ICON[sorted] : '↕'}
                        </span>
                      </button>
                    ) : (
                      <table.FlexRender header={header} />
                    )}
                  </th>
                );
              })}
            </tr>
          ))}
        </thead>
        <tbody>
          {table.getRowModel().rows.map((row) => (
            <tr key={row.id} {...rowAttributes?.(row.original)}>
              {row.getAllCells().map((cell) => {
                const meta = cell.column.columnDef.meta;
                const value = cell.getValue();
                // A plain value cut by the ellipsis keeps its full text in a native tooltip.
                const plain = typeof cell.column.columnDef.cell !== 'function' && (typeof value === 'string' || typeof value === 'number');
                return (
                  <td key={cell.id} className={cell.column.id === 'actions' ? 'data-table__actions' : undefined}>
                    <div
                      className={meta?.align === 'end' ? 'data-table__cell data-table__cell--end' : 'data-table__cell'}
                      title={plain ? String(value) : undefined}
                    >
                      <table.FlexRender cell={cell} />
                    </div>
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

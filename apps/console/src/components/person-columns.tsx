import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { columnHelper, type DataTableColumn, type RowData } from './data-table.tsx';

/**
 * The email column of a list of people (members, invitations): sortable, unsized (it takes what
 * the sized columns leave), the whole address on hover; `note` adds a muted line under it; `to`
 * makes the address the link to the row's own page.
 */
export function emailColumn<TRow extends RowData & { email: string }>({
  testId,
  note,
  to,
}: {
  /** On the address. */
  testId: string;
  note?: (row: TRow) => ReactNode;
  /** The row's own page (a detail), opened by the address. */
  to?: (row: TRow) => string;
}): DataTableColumn<TRow> {
  const column = columnHelper<TRow>();
  return column.accessor((row) => row.email, {
    id: 'email',
    header: 'Email',
    sortFn: 'text',
    cell: (info) => {
      const extra = note?.(info.row.original);
      const href = to?.(info.row.original);
      return (
        <div title={info.getValue()}>
          <div data-testid={testId}>{href ? <Link to={href}>{info.getValue()}</Link> : info.getValue()}</div>
          {extra && <div className="muted">{extra}</div>}
        </div>
      );
    },
  });
}

/**
 * The role a person holds (or is invited to), by its name; the key is on hover and in
 * `data-role-key`. `nameOf` is read at render, so columns made once show names that arrive later
 * (`useRoleOptions(slug).nameOf`).
 */
export function roleColumn<TRow extends RowData & { roleKey: string }>({
  testId,
  nameOf,
}: {
  testId: string;
  nameOf: () => (key: string) => string;
}): DataTableColumn<TRow> {
  const column = columnHelper<TRow>();
  return column.accessor((row) => row.roleKey, {
    id: 'roleKey',
    header: 'Role',
    enableSorting: false,
    meta: { width: '12.5rem' },
    cell: (info) => (
      <span data-testid={testId} data-role-key={info.getValue()} title={info.getValue()}>
        {nameOf()(info.getValue())}
      </span>
    ),
  });
}

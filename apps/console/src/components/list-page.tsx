import type { ReactNode } from 'react';
import type { useActiveOrganization } from '../lib/organization.ts';
import { DataTable, type DataTableProps, type RowData } from './data-table.tsx';
import { EmptyState, type EmptyStateProps } from './empty-state.tsx';
import { ErrorPanel } from './error-panel.tsx';
import { Pager, type PagerState } from './pager.tsx';
import { Skeleton } from './skeleton.tsx';

type ActiveOrganization = ReturnType<typeof useActiveOrganization>;
type Organization = NonNullable<ActiveOrganization['organization']>;

/**
 * The parts of a `useQuery` result of a cursor-paged list procedure (`{ data, nextCursor }`) that
 * the list shows. `failureReason` is set from the first failed attempt, before the retries end.
 */
type ListQuery<TRow> = {
  data: { data: TRow[]; nextCursor: string | null } | undefined;
  isPending: boolean;
  isFetching: boolean;
  isPlaceholderData: boolean;
  error: unknown;
  failureReason: unknown;
  refetch: () => unknown;
};

type ListProps<TRow extends RowData> = {
  /**
   * Prefix of the test ids: `<testId>-loading`, `-empty`, `-pager`, `-no-workspace`, `-retrying`,
   * `-table`, `-list`.
   */
  testId: string;
  /** The rows, plural, as in "Loading members…" and "Could not load the members". */
  noun: string;
  query: ListQuery<TRow>;
  pager: PagerState;
  /** What an empty page says, and what to do next. */
  empty: EmptyStateProps;
  /**
   * Given while a filter is on: an empty page names what was asked for (e.g. "No revoked
   * invitations.") and offers Show all, which calls `clear`, instead of `empty`.
   */
  filtered?: { title: string; clear: () => void };
  /** Given, the list stands in a panel (`<testId>-list`) under this heading. */
  title?: string;
  /** Beside the panel's heading: a filter, a Refresh button. */
  tools?: ReactNode;
  /** Each row's React key (and the DataTable's row id). */
  rowKey: (row: TRow) => string;
  /** Column definitions for a DataTable: sortable, truncating cells, row actions. */
  table: ListTable<TRow>;
};

/**
 * How a list draws its rows: column definitions for a DataTable. The table's rows are the page on
 * screen; its headers sort them.
 */
export type ListTable<TRow extends RowData> = Pick<DataTableProps<TRow>, 'columns' | 'rowAttributes' | 'minWidth'>;

type ListPageProps<TRow extends RowData> = ListProps<TRow> &
  (
    | {
        /**
         * The active workspace the list belongs to: until one is chosen, the guard stands in for
         * everything below (`above` and the list).
         */
        workspace: ActiveOrganization;
        /** Shown above the list once there is an organization: forms, filters, a revealed secret. */
        above?: (organization: Organization) => ReactNode;
      }
    | {
        /** A list of no workspace (plans), or a section of a page that guards it already. */
        workspace?: undefined;
        above?: undefined;
      }
  );

/**
 * A console list, the same on every page: the workspace guard, then loading, the error (shown
 * from the first failed attempt, while svc still retries), the empty state with its next step,
 * the rows, and the pager (only when there is more than one page).
 */
export function ListPage<TRow extends RowData>(props: ListPageProps<TRow>) {
  const { testId, noun } = props;
  if (props.workspace === undefined) {
    return <ListBody {...props} />;
  }
  const { workspace, above } = props;
  if (workspace.error) {
    return <ErrorPanel error={workspace.error} title="Could not load your workspace" />;
  }
  if (workspace.isLoading) {
    return <Loading testId={testId} noun={noun} />;
  }
  const organization = workspace.organization;
  if (!organization) {
    return (
      <p className="muted" data-testid={`${testId}-no-workspace`}>
        You are not in a workspace: there are no {noun} to show. Accept an invitation to an organization, or ask an admin of one to add you.
      </p>
    );
  }
  return (
    <div className="list-page">
      {above?.(organization)}
      <ListBody {...props} />
    </div>
  );
}

function Loading({ testId, noun }: { testId: string; noun: string }) {
  return <Skeleton label={`Loading ${noun}…`} testId={`${testId}-loading`} lines={5} />;
}

function ListBody<TRow extends RowData>(props: ListProps<TRow>) {
  if (props.title === undefined) {
    return <ListStates {...props} />;
  }
  return (
    <section className="panel" data-testid={`${props.testId}-list`}>
      <div className="list-page__head">
        <h2 className="panel__title">{props.title}</h2>
        {props.tools}
      </div>
      <ListStates {...props} />
    </section>
  );
}

function ListStates<TRow extends RowData>({ testId, noun, query, pager, empty, filtered, rowKey, table }: ListProps<TRow>) {
  // The error as soon as an attempt fails: waiting out the retries would leave "Loading…" on
  // screen for seconds with nothing to act on.
  const failure = query.error ?? query.failureReason;
  const failed = failure !== null && failure !== undefined;
  const retrying = failed && query.isFetching;
  return (
    <>
      {failed && (
        <ErrorPanel error={failure} title={`Could not load the ${noun}`} onRetry={retrying ? undefined : () => void query.refetch()} />
      )}
      {retrying && (
        <p className="muted" role="status" data-testid={`${testId}-retrying`}>
          Trying again…
        </p>
      )}
      {query.isPending && !failed && <Loading testId={testId} noun={noun} />}
      {query.data &&
        (query.data.data.length === 0 ? (
          <EmptyState
            {...(filtered
              ? {
                  title: filtered.title,
                  next: 'Nothing matches the filter: change it, or show everything.',
                  action: { label: 'Show all', onClick: filtered.clear },
                }
              : empty)}
            testId={`${testId}-empty`}
          />
        ) : (
          <DataTable
            columns={table.columns}
            data={query.data.data}
            rowId={rowKey}
            rowAttributes={table.rowAttributes}
            minWidth={table.minWidth}
            busy={query.isPlaceholderData}
            testId={`${testId}-table`}
            label={noun}
          />
        ))}
      {query.data && <Pager pager={pager} nextCursor={query.data.nextCursor} busy={query.isPlaceholderData} testId={`${testId}-pager`} />}
    </>
  );
}

import { BILLING_SYNC_STATUSES, type TBillingSyncLog, type TBillingSyncStatus } from '@svc/contracts/billing';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useMemo } from 'react';
import { useSearchParams } from 'react-router';
import { toast } from 'sonner';
import { actionsColumn, columnHelper, whenColumn } from '../../components/data-table.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { usePager } from '../../components/pager.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { StatusFilter } from '../../components/status-filter.tsx';
import { parseError } from '../../lib/errors.ts';
import { useTRPC } from '../../trpc.ts';
import { PROVIDER_LABEL } from './providers.ts';

const PAGE_SIZE = 50;
/** While a shown sync log is still queued, the list refreshes at this pace. */
const LIVE_REFRESH_MS = 2000;

const isRetryable = (log: Pick<TBillingSyncLog, 'status'>) => log.status === 'failed' || log.status === 'skipped';
const STATUS_TONE: Partial<Record<TBillingSyncStatus, string>> = { succeeded: 'pill--on', failed: 'pill--off' };

function syncLogColumns(organizationSlug: string) {
  const column = columnHelper<TBillingSyncLog>();
  return column.columns([
    whenColumn(column, 'createdAt', 'Created', { width: '8.5rem' }),
    column.accessor((log) => PROVIDER_LABEL[log.provider], {
      id: 'provider',
      header: 'Provider',
      sortFn: 'text',
      meta: { width: '8rem' },
    }),
    column.accessor('eventType', {
      header: 'Event type',
      sortFn: 'text',
      meta: { width: '8.5rem', description: 'The usage event type, and (on hover) the provider item it was synced to' },
      cell: (info) => <code title={`${info.getValue()} → ${info.row.original.providerItemId}`}>{info.getValue()}</code>,
    }),
    column.accessor('usageEventId', {
      header: 'Usage event',
      enableSorting: false,
      meta: { width: '8.5rem' },
      cell: (info) => <Identifier value={info.getValue()} label="usage event id" />,
    }),
    column.accessor('status', {
      header: 'Status',
      sortFn: 'text',
      meta: { width: '8.5rem' },
      cell: (info) => (
        <span className={`pill ${STATUS_TONE[info.getValue()] ?? ''}`} data-testid="billing-sync-status">
          {info.getValue()}
        </span>
      ),
    }),
    column.accessor('attempts', {
      header: 'Attempts',
      sortFn: 'basic',
      meta: { width: '8.5rem', align: 'end', description: 'Times the sync task took it up; a retry starts again at 0' },
      cell: (info) => <span data-testid="billing-sync-attempts">{info.getValue()}</span>,
    }),
    column.accessor((log) => log.reason ?? log.providerRecordId ?? '', {
      id: 'outcome',
      header: 'Reason / provider record',
      enableSorting: false,
      cell: (info) => {
        const { reason, providerRecordId } = info.row.original;
        if (reason) {
          return (
            <span data-testid="billing-sync-reason" title={reason}>
              {reason}
            </span>
          );
        }
        return (
          <span data-testid="billing-sync-reason">
            {providerRecordId ? <Identifier value={providerRecordId} label="provider record id" /> : <span className="muted">—</span>}
          </span>
        );
      },
    }),
    actionsColumn(column, (log) => (isRetryable(log) ? <SyncLogActions log={log} organizationSlug={organizationSlug} /> : null)),
  ]);
}

/**
 * One sync log per usage event and mapping, newest first, filtered by status (kept in the URL);
 * while one on screen is queued the list refreshes itself, Refresh does it at once.
 */
export function SyncLogs({
  organizationId,
  organizationSlug,
  onAddMapping,
}: {
  organizationId: string;
  organizationSlug: string;
  /** The empty list's next step: opens the add mapping dialog. */
  onAddMapping: () => void;
}) {
  const trpc = useTRPC();
  const pager = usePager();
  const [params, setParams] = useSearchParams();
  const columns = useMemo(() => syncLogColumns(organizationSlug), [organizationSlug]);
  const status = (params.get('status') ?? undefined) as TBillingSyncStatus | undefined;
  const logs = useQuery({
    ...trpc.billing.syncLog.list.queryOptions({ tenant_id: organizationId, status, limit: PAGE_SIZE, cursor: pager.cursor }),
    placeholderData: keepPreviousData,
    refetchInterval: (query) => (query.state.data?.data.some((l) => l.status === 'queued') ? LIVE_REFRESH_MS : false),
  });
  const setStatus = (value: string) => {
    const next = new URLSearchParams(params);
    if (value) {
      next.set('status', value);
    } else {
      next.delete('status');
    }
    setParams(next);
    pager.reset();
  };

  return (
    <ListPage
      testId="billing-sync"
      noun="sync logs"
      title="Sync logs"
      tools={
        <div className="form-row">
          <StatusFilter
            testId="billing-sync-filter-status"
            anyLabel="Any status"
            options={BILLING_SYNC_STATUSES}
            value={status ?? ''}
            onChange={setStatus}
          />
          <button type="button" className="button" onClick={() => void logs.refetch()} data-testid="billing-sync-refresh">
            Refresh
          </button>
        </div>
      }
      query={logs}
      pager={pager}
      filtered={status ? { title: `No ${status} sync logs.`, clear: () => setStatus('') } : undefined}
      empty={{
        title: 'No sync logs yet.',
        next: 'Map a usage event type: each mapped usage event is synced and appears here.',
        action: { label: 'Add mapping', onClick: onAddMapping },
      }}
      rowKey={(log) => log.id}
      table={{
        columns,
        rowAttributes: (log) => ({ 'data-testid': 'billing-sync-row', 'data-sync-log-id': log.id, 'data-status': log.status }),
        minWidth: '62rem',
      }}
    />
  );
}

/**
 * Retry for a failed or skipped log: the worker sends it again with the same idempotency key, so
 * the provider records it at most once.
 */
function SyncLogActions({ log, organizationSlug }: { log: TBillingSyncLog; organizationSlug: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const retry = useMutation(
    trpc.billing.syncLog.retry.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.billing.syncLog.pathKey() }),
      onError: (error) => toast.error(`Could not retry the sync log: ${parseError(error).message}`),
    }),
  );
  return (
    <RowActions
      name={`the ${log.eventType} sync log`}
      testId="billing-sync-actions"
      actions={[
        {
          label: 'Retry',
          testId: 'billing-sync-retry',
          disabled: retry.isPending,
          onSelect: () => retry.mutate({ id: log.id, organization_slug: organizationSlug }),
        },
      ]}
    />
  );
}

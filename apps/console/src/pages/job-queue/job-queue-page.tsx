import type { TJobQueueFailure, TJobQueueLockedJob, TJobQueueOverview, TJobQueueTaskCounts } from '@svc/contracts/job-queue';
import { useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { columnHelper, DataTable, whenColumn } from '../../components/data-table.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { Select, type SelectOption } from '../../components/select.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { useTRPC } from '../../trpc.ts';

/** 75 -> "1m 15s"; ages of jobs, from the database's clock. */
function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) {
    return `${s}s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)}m ${s % 60}s`;
  }
  if (s < 86_400) {
    return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  }
  return `${Math.floor(s / 86_400)}d ${Math.floor((s % 86_400) / 3600)}h`;
}

const countColumn = columnHelper<TJobQueueTaskCounts>();
const number = (header: string, key: 'waiting' | 'scheduled' | 'locked' | 'failed' | 'total') =>
  countColumn.accessor(key, { header, sortFn: 'basic', meta: { width: '8.5rem', align: 'end' } });

/** Jobs by task: the task name (an Identifier, it is what the code registers) and its counts by state. */
const COUNT_COLUMNS = countColumn.columns([
  countColumn.accessor('task', {
    header: 'Task',
    sortFn: 'text',
    cell: (info) => <Identifier value={info.getValue()} label="task name" tail={10} testId="job-queue-task" />,
  }),
  number('Waiting', 'waiting'),
  number('Scheduled', 'scheduled'),
  number('Locked', 'locked'),
  number('Failed', 'failed'),
  number('Total', 'total'),
]);

const failureColumn = columnHelper<TJobQueueFailure>();

/** Failed jobs: id and task as Identifiers, when it failed relative (exact on hover), the masked last error. */
const FAILURE_COLUMNS = failureColumn.columns([
  failureColumn.accessor('id', {
    header: 'Job',
    enableSorting: false,
    meta: { width: '7rem', description: "Graphile Worker's job id" },
    cell: (info) => <Identifier value={info.getValue()} label="job id" testId="job-queue-failure-id" />,
  }),
  failureColumn.accessor('task', {
    header: 'Task',
    sortFn: 'text',
    meta: { width: '12rem' },
    cell: (info) => <Identifier value={info.getValue()} label="task name" tail={10} copy={false} />,
  }),
  failureColumn.accessor('attempts', {
    header: 'Attempts',
    enableSorting: false,
    meta: { width: '6rem', align: 'end' },
    cell: (info) => `${info.getValue()} / ${info.row.original.maxAttempts}`,
  }),
  whenColumn(failureColumn, 'updatedAt', 'Failed'),
  failureColumn.accessor('lastError', {
    header: 'Last error',
    enableSorting: false,
    cell: (info) => {
      const error = info.getValue();
      return error ? (
        <code data-testid="job-queue-failure-error" title={error}>
          {error}
        </code>
      ) : (
        <span className="muted" data-testid="job-queue-failure-error">
          —
        </span>
      );
    },
  }),
]);

const lockedColumn = columnHelper<TJobQueueLockedJob>();

/** Locked jobs: id, task and the worker as Identifiers, how long it has been held. */
const LOCKED_COLUMNS = lockedColumn.columns([
  lockedColumn.accessor('id', {
    header: 'Job',
    enableSorting: false,
    meta: { width: '7rem', description: "Graphile Worker's job id" },
    cell: (info) => <Identifier value={info.getValue()} label="job id" testId="job-queue-locked-id" />,
  }),
  lockedColumn.accessor('task', {
    header: 'Task',
    sortFn: 'text',
    cell: (info) => <Identifier value={info.getValue()} label="task name" tail={10} copy={false} />,
  }),
  lockedColumn.accessor('lockedBy', {
    header: 'Locked by',
    enableSorting: false,
    meta: { width: '12rem', description: "The worker's id, not a host name" },
    cell: (info) => {
      const by = info.getValue();
      return by ? <Identifier value={by} label="worker id" /> : <span className="muted">—</span>;
    },
  }),
  lockedColumn.accessor('lockedSeconds', {
    header: 'Locked for',
    sortFn: 'basic',
    // The heading and its sort arrow whole.
    meta: { width: '9rem', align: 'end' },
    cell: (info) => <span title={info.row.original.lockedAt}>{formatDuration(info.getValue())}</span>,
  }),
  lockedColumn.accessor('attempts', {
    header: 'Attempts',
    enableSorting: false,
    meta: { width: '7rem', align: 'end' },
    cell: (info) => `${info.getValue()} / ${info.row.original.maxAttempts}`,
  }),
]);

/** The task filter's "every task" value (a Select's values are never ''). */
const ALL_TASKS = '*';

/** Platform admins: Graphile Worker's queue, read on demand (Refresh), never a job's payload. */
export function JobQueuePage() {
  const trpc = useTRPC();
  // Always fresh when opened: a queue view that is 30 s old would mislead.
  const queue = useQuery(trpc.jobQueue.overview.queryOptions(undefined, { staleTime: 0 }));

  return (
    <div data-testid="page-job-queue">
      <PageHeader
        title="Job queue"
        description="Graphile Worker's jobs by task and state, the oldest waiting job, recent failures and locked jobs. Platform admins only."
        actions={
          <button
            type="button"
            className="button"
            onClick={() => void queue.refetch()}
            disabled={queue.isFetching}
            data-testid="job-queue-refresh"
          >
            {queue.isFetching ? 'Refreshing…' : 'Refresh'}
          </button>
        }
      />
      {queue.isError && (
        <ErrorPanel
          error={queue.error}
          title="Could not load the job queue"
          onRetry={() => void queue.refetch()}
          forbidden={{
            title: 'Platform admins only',
            help: "Only platform admins see the job queue: it is svc's own, shared by every organization on this deployment. Your organization's webhook and email deliveries are on their own pages.",
          }}
        />
      )}
      {queue.isPending && !queue.isError && <Skeleton label="Loading the job queue…" testId="job-queue-loading" heading />}
      {queue.data && <Overview data={queue.data} />}
    </div>
  );
}

function Overview({ data }: { data: TJobQueueOverview }) {
  // Narrows the failures and locked jobs to one task; applies as soon as it is picked.
  const [task, setTask] = useState<string>(ALL_TASKS);
  const taskOptions = useMemo<SelectOption<string>[]>(() => {
    const names = new Set([...data.counts.map((c) => c.task), ...data.failures.map((f) => f.task), ...data.locked.map((l) => l.task)]);
    return [{ value: ALL_TASKS, label: 'Every task' }, ...[...names].sort().map((name) => ({ value: name, label: name }))];
  }, [data]);
  const failures = task === ALL_TASKS ? data.failures : data.failures.filter((f) => f.task === task);
  const locked = task === ALL_TASKS ? data.locked : data.locked.filter((l) => l.task === task);
  const totals = data.counts.reduce(
    (sum, c) => ({
      waiting: sum.waiting + c.waiting,
      scheduled: sum.scheduled + c.scheduled,
      locked: sum.locked + c.locked,
      failed: sum.failed + c.failed,
    }),
    { waiting: 0, scheduled: 0, locked: 0, failed: 0 },
  );
  return (
    <>
      <div className="card-grid">
        <section className="card">
          <h2 className="card__label">Waiting</h2>
          <p className="card__value" data-testid="job-queue-total-waiting">
            {totals.waiting}
          </p>
          <p className="card__hint" data-testid="job-queue-oldest-waiting">
            {data.oldestWaiting
              ? `oldest ${data.oldestWaiting.task}, due ${formatDuration(data.oldestWaiting.ageSeconds)} ago`
              : 'nothing waiting'}
          </p>
        </section>
        <section className="card">
          <h2 className="card__label">Scheduled</h2>
          <p className="card__value" data-testid="job-queue-total-scheduled">
            {totals.scheduled}
          </p>
          <p className="card__hint">run_at in the future, retries included</p>
        </section>
        <section className="card">
          <h2 className="card__label">Locked</h2>
          <p className="card__value" data-testid="job-queue-total-locked">
            {totals.locked}
          </p>
          <p className="card__hint">held by a worker now</p>
        </section>
        <section className="card">
          <h2 className="card__label">Failed</h2>
          <p className="card__value" data-testid="job-queue-total-failed">
            {totals.failed}
          </p>
          <p className="card__hint">attempts used up</p>
        </section>
      </div>

      <section className="panel" data-testid="job-queue-counts">
        <h2 className="panel__title">By task</h2>
        {data.counts.length === 0 ? (
          <p className="muted" data-testid="job-queue-empty">
            The queue is empty: nothing is waiting, scheduled, locked or failed.
          </p>
        ) : (
          <DataTable
            columns={COUNT_COLUMNS}
            data={data.counts}
            rowId={(c) => c.task}
            rowAttributes={(c) => ({ 'data-testid': 'job-queue-count-row', 'data-task': c.task })}
            label="Jobs by task"
            minWidth="56rem"
            testId="job-queue-counts-table"
          />
        )}
      </section>

      <form className="form-row" data-testid="job-queue-filters" onSubmit={(e) => e.preventDefault()}>
        <div className="form-field">
          <label htmlFor="job-queue-filter-task">Failures and locked jobs of</label>
          <Select id="job-queue-filter-task" value={task} options={taskOptions} onValueChange={setTask} testId="job-queue-filter-task" />
        </div>
      </form>

      <section className="panel" data-testid="job-queue-failures">
        <h2 className="panel__title">Recent failures</h2>
        {failures.length === 0 ? (
          <p className="muted">{task === ALL_TASKS ? 'No failed jobs.' : 'No failed jobs of this task.'}</p>
        ) : (
          <DataTable
            columns={FAILURE_COLUMNS}
            data={failures}
            rowId={(f) => f.id}
            rowAttributes={(f) => ({ 'data-testid': 'job-queue-failure-row', 'data-job-id': f.id, 'data-task': f.task })}
            label="Recent failures"
            minWidth="56rem"
            testId="job-queue-failures-table"
          />
        )}
      </section>

      <section className="panel" data-testid="job-queue-locked">
        <h2 className="panel__title">Locked jobs</h2>
        {locked.length === 0 ? (
          <p className="muted">{task === ALL_TASKS ? 'No job is locked.' : 'No job of this task is locked.'}</p>
        ) : (
          <DataTable
            columns={LOCKED_COLUMNS}
            data={locked}
            rowId={(l) => l.id}
            rowAttributes={(l) => ({ 'data-testid': 'job-queue-locked-row', 'data-job-id': l.id, 'data-task': l.task })}
            label="Locked jobs"
            minWidth="52rem"
            testId="job-queue-locked-table"
          />
        )}
      </section>
      <p className="muted">
        Read <When at={data.generatedAt} empty="—" />. Retrying a failed job: see "Inspecting the job queue" in the README.
      </p>
    </>
  );
}

import type { TJobQueueFailure, TJobQueueLockedJob, TJobQueueOverview } from '@svc/contracts/job-queue';
import { useQuery } from '@tanstack/react-query';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { PageHeader } from '../../components/page-header.tsx';
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

function Time({ iso }: { iso: string }) {
  return (
    <time dateTime={iso} title={iso}>
      {new Date(iso).toLocaleString()}
    </time>
  );
}

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
      {queue.isError && <ErrorPanel error={queue.error} title="Could not load the job queue" onRetry={() => void queue.refetch()} />}
      {queue.isPending && !queue.isError && (
        <p className="loading" data-testid="job-queue-loading">
          Loading the job queue…
        </p>
      )}
      {queue.data && <Overview data={queue.data} />}
    </div>
  );
}

function Overview({ data }: { data: TJobQueueOverview }) {
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
            The queue is empty.
          </p>
        ) : (
          <table className="data-table" data-testid="job-queue-counts-table">
            <thead>
              <tr>
                <th>Task</th>
                <th>Waiting</th>
                <th>Scheduled</th>
                <th>Locked</th>
                <th>Failed</th>
                <th>Total</th>
              </tr>
            </thead>
            <tbody>
              {data.counts.map((c) => (
                <tr key={c.task} data-testid="job-queue-count-row" data-task={c.task}>
                  <td>
                    <code>{c.task}</code>
                  </td>
                  <td>{c.waiting}</td>
                  <td>{c.scheduled}</td>
                  <td>{c.locked}</td>
                  <td>{c.failed}</td>
                  <td>{c.total}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      <section className="panel" data-testid="job-queue-failures">
        <h2 className="panel__title">Recent failures</h2>
        {data.failures.length === 0 ? <p className="muted">No failed jobs.</p> : <FailuresTable failures={data.failures} />}
      </section>

      <section className="panel" data-testid="job-queue-locked">
        <h2 className="panel__title">Locked jobs</h2>
        {data.locked.length === 0 ? <p className="muted">No job is locked.</p> : <LockedTable locked={data.locked} />}
      </section>
      <p className="muted">
        Read at <Time iso={data.generatedAt} />. Retrying a failed job: see "Inspecting the job queue" in the README.
      </p>
    </>
  );
}

function FailuresTable({ failures }: { failures: TJobQueueFailure[] }) {
  return (
    <table className="data-table" data-testid="job-queue-failures-table">
      <thead>
        <tr>
          <th>Job</th>
          <th>Task</th>
          <th>Attempts</th>
          <th>Failed at</th>
          <th>Last error</th>
        </tr>
      </thead>
      <tbody>
        {failures.map((f) => (
          <tr key={f.id} data-testid="job-queue-failure-row" data-job-id={f.id}>
            <td>
              <code>{f.id}</code>
            </td>
            <td>
              <code>{f.task}</code>
            </td>
            <td>
              {f.attempts} / {f.maxAttempts}
            </td>
            <td>
              <Time iso={f.updatedAt} />
            </td>
            <td data-testid="job-queue-failure-error">
              {f.lastError ? (
                <code style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>{f.lastError}</code>
              ) : (
                <span className="muted">—</span>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function LockedTable({ locked }: { locked: TJobQueueLockedJob[] }) {
  return (
    <table className="data-table" data-testid="job-queue-locked-table">
      <thead>
        <tr>
          <th>Job</th>
          <th>Task</th>
          <th>Locked by</th>
          <th>Locked for</th>
          <th>Attempts</th>
        </tr>
      </thead>
      <tbody>
        {locked.map((l) => (
          <tr key={l.id} data-testid="job-queue-locked-row" data-job-id={l.id}>
            <td>
              <code>{l.id}</code>
            </td>
            <td>
              <code>{l.task}</code>
            </td>
            <td>
              <code>{l.lockedBy ?? '—'}</code>
            </td>
            <td title={l.lockedAt}>{formatDuration(l.lockedSeconds)}</td>
            <td>
              {l.attempts} / {l.maxAttempts}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

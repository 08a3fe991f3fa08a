import type { TEmailDelivery, TEmailDeliveryStatus, TProcessEmailDeliveriesResponse } from '@svc/contracts/email-deliveries';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { Pager, usePager } from '../../components/pager.tsx';
import { parseError } from '../../lib/errors.ts';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;
const STATUSES: TEmailDeliveryStatus[] = ['pending', 'retrying', 'sent', 'failed'];

const NOT_SENT_REASONS: Record<string, string> = {
  invitation_revoked: 'not sent: the invitation was revoked',
  invitation_accepted: 'not sent: the invitation was already accepted',
  invitation_expired: 'not sent: the invitation expired',
};

const when = (iso: string | null) =>
  iso ? (
    <time dateTime={iso} title={iso}>
      {new Date(iso).toLocaleString()}
    </time>
  ) : (
    <span className="muted">—</span>
  );

/**
 * The organization's invitation emails (org admins): who, what, where each one stands. The body
 * (it holds the one-time link) and whatever the provider answered are never shown: the API does
 * not return them. "Process due now" sends what is due at once instead of waiting for the worker.
 */
export function EmailDeliveriesPage() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const active = useActiveOrganization();
  const pager = usePager();
  const [status, setStatus] = useState<TEmailDeliveryStatus | ''>('');
  const slug = active.organization?.slug;
  const deliveries = useQuery({
    ...trpc.emailDeliveries.list.queryOptions(
      { organization_slug: slug, limit: PAGE_SIZE, cursor: pager.cursor, ...(status ? { status } : {}) },
      { enabled: slug !== undefined },
    ),
    placeholderData: keepPreviousData,
  });
  const invalidate = () => queryClient.invalidateQueries({ queryKey: trpc.emailDeliveries.list.queryKey() });
  const processing = useMutation(trpc.emailDeliveries.process.mutationOptions({ onSettled: invalidate }));
  const run = (ids?: string[]) => processing.mutateAsync({ organization_slug: slug, ...(ids ? { ids } : {}) }).catch(() => undefined);

  return (
    <div data-testid="page-email-deliveries">
      <PageHeader
        title="Email deliveries"
        description={`Invitation emails of ${active.organization ? active.organization.name : 'this workspace'}: recipient, subject, status and attempts. Email bodies and the provider's answers are never shown.`}
        actions={
          slug !== undefined && (
            <button
              type="button"
              className="button button--primary"
              style={{ whiteSpace: 'nowrap' }}
              onClick={() => void run()}
              disabled={processing.isPending}
              data-testid="email-process"
            >
              {processing.isPending ? 'Processing…' : 'Process due now'}
            </button>
          )
        }
      />
      {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
      {processing.isSuccess && <ProcessResult result={processing.data} />}
      {processing.isError && <ProcessError error={processing.error} />}
      {slug !== undefined && (
        <form className="form-row" data-testid="email-deliveries-filters" onSubmit={(e) => e.preventDefault()}>
          <label className="form-field">
            <span>Status</span>
            <select
              data-testid="email-deliveries-filter-status"
              value={status}
              onChange={(e) => {
                setStatus(e.target.value as TEmailDeliveryStatus | '');
                pager.reset();
              }}
            >
              <option value="">Any</option>
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
        </form>
      )}
      {deliveries.isError && (
        <ErrorPanel error={deliveries.error} title="Could not load the email deliveries" onRetry={() => void deliveries.refetch()} />
      )}
      {(active.isLoading || deliveries.isPending) && !deliveries.isError && slug !== undefined && (
        <p className="loading" data-testid="email-deliveries-loading">
          Loading email deliveries…
        </p>
      )}
      {deliveries.data && slug !== undefined && (
        <>
          {deliveries.data.data.length === 0 ? (
            <p className="muted" data-testid="email-deliveries-empty">
              {status ? `No ${status} emails.` : 'No invitation emails yet.'}
            </p>
          ) : (
            <table className="data-table" data-testid="email-deliveries-table" aria-busy={deliveries.isPlaceholderData}>
              <thead>
                <tr>
                  <th>Recipient</th>
                  <th>Subject</th>
                  <th>Status</th>
                  <th>Attempts</th>
                  <th>Last attempt</th>
                  <th>Next attempt / sent</th>
                  <th>Created</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {deliveries.data.data.map((delivery) => (
                  <DeliveryRow
                    key={delivery.id}
                    delivery={delivery}
                    busy={processing.isPending}
                    onSendNow={() => void run([delivery.id])}
                  />
                ))}
              </tbody>
            </table>
          )}
          <Pager
            pager={pager}
            nextCursor={deliveries.isPlaceholderData ? null : deliveries.data.nextCursor}
            testId="email-deliveries-pager"
          />
        </>
      )}
    </div>
  );
}

function DeliveryRow({ delivery, busy, onSendNow }: { delivery: TEmailDelivery; busy: boolean; onSendNow: () => void }) {
  const waiting = delivery.status === 'pending' || delivery.status === 'retrying';
  const reason = delivery.metadata.notSentReason ? NOT_SENT_REASONS[delivery.metadata.notSentReason] : undefined;
  return (
    <tr data-testid="email-delivery-row" data-delivery-id={delivery.id} data-recipient={delivery.recipient} data-status={delivery.status}>
      <td data-testid="email-delivery-recipient">{delivery.recipient}</td>
      <td>
        {delivery.subject}
        {delivery.metadata.roleKey && (
          <div className="muted">
            role <code>{delivery.metadata.roleKey}</code>
          </div>
        )}
      </td>
      <td>
        <span className={`pill ${delivery.status === 'sent' ? 'pill--on' : 'pill--off'}`} data-testid="email-delivery-status">
          {delivery.status}
        </span>
        {reason && <div className="muted">{reason}</div>}
      </td>
      <td data-testid="email-delivery-attempts">{delivery.attemptCount}</td>
      <td>{when(delivery.lastAttemptAt)}</td>
      <td>{delivery.status === 'sent' ? when(delivery.sentAt) : when(delivery.nextAttemptAt)}</td>
      <td>{when(delivery.createdAt)}</td>
      <td>
        {waiting && (
          <button type="button" className="button" disabled={busy} onClick={onSendNow} data-testid="email-delivery-send-now">
            Send now
          </button>
        )}
      </td>
    </tr>
  );
}

function ProcessResult({ result }: { result: TProcessEmailDeliveriesResponse }) {
  return (
    <section className="panel" role="status" data-testid="email-process-result">
      <h2 className="panel__title">Processed</h2>
      {result.processed === 0 ? (
        <p className="muted" data-testid="email-process-summary">
          Nothing was due: no email was sent.
        </p>
      ) : (
        <p data-testid="email-process-summary">
          {result.processed} attempted: {result.sent} sent, {result.retrying} will be retried, {result.failed} failed.
        </p>
      )}
    </section>
  );
}

/** email_delivery_disabled is not a fault to retry: say what it means and what to do instead. */
function ProcessError({ error }: { error: unknown }) {
  const disabled = parseError(error).code === 'email_delivery_disabled';
  return (
    <>
      {disabled && (
        <section className="panel" data-testid="email-disabled-explained">
          <h2 className="panel__title">Email delivery is disabled</h2>
          <p>
            This server has no email provider (EMAIL_ENABLED and EMAIL_PROVIDER), so svc sends no invitation emails. Copy the invite link
            shown when you create an invitation and send it yourself.
          </p>
        </section>
      )}
      <ErrorPanel error={error} title={disabled ? 'Nothing was processed' : 'Could not process email deliveries'} />
    </>
  );
}

import type { TEmailDelivery, TEmailDeliveryStatus, TProcessEmailDeliveriesResponse } from '@svc/contracts/email-deliveries';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useNavigate } from 'react-router';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { StatusFilter } from '../../components/status-filter.tsx';
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
  const navigate = useNavigate();
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
  const showAll = () => {
    setStatus('');
    pager.reset();
  };
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
      {processing.isSuccess && <ProcessResult result={processing.data} />}
      {processing.isError && <ProcessError error={processing.error} />}
      <ListPage
        testId="email-deliveries"
        noun="email deliveries"
        workspace={active}
        query={deliveries}
        pager={pager}
        filtered={status ? { title: `No ${status} emails.`, clear: showAll } : undefined}
        empty={{
          title: 'No invitation emails yet.',
          next: 'Each invitation you create queues an email here.',
          action: { label: 'Invite someone', onClick: () => void navigate('/invitations') },
        }}
        above={() => (
          <form className="form-row" data-testid="email-deliveries-filters" onSubmit={(e) => e.preventDefault()}>
            <StatusFilter testId="email-deliveries-filter-status" options={STATUSES} value={status} onChange={setStatus} pager={pager} />
          </form>
        )}
        columns={['Recipient', 'Subject', 'Status', 'Attempts', 'Last attempt', 'Next attempt / sent', 'Created', '']}
        rowKey={(delivery) => delivery.id}
        row={(delivery) => <DeliveryRow delivery={delivery} busy={processing.isPending} onSendNow={() => void run([delivery.id])} />}
      />
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

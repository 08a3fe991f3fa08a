import type { TEmailDelivery, TEmailDeliveryStatus, TProcessEmailDeliveriesResponse } from '@svc/contracts/email-deliveries';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { useNavigate } from 'react-router';
import { actionsColumn, columnHelper, whenColumn } from '../../components/data-table.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { RowActions } from '../../components/row-actions.tsx';
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

const column = columnHelper<TEmailDelivery>();

/**
 * The list's columns: the recipient takes what the sized columns leave (whole on hover), times are
 * relative (exact on hover), "Send now" is in the row's menu while the email waits.
 */
function deliveryColumns(busy: boolean, onSendNow: (delivery: TEmailDelivery) => Promise<unknown>) {
  return column.columns([
    column.accessor('recipient', {
      header: 'Recipient',
      sortFn: 'text',
      meta: { width: '15rem' },
      cell: (info) => <Identifier value={info.getValue()} label="recipient" testId="email-delivery-recipient" />,
    }),
    column.accessor('subject', {
      header: 'Subject',
      sortFn: 'text',
      cell: (info) => {
        const role = info.row.original.metadata.roleKey;
        const title = role ? `${info.getValue()} (role ${role})` : info.getValue();
        return <span title={title}>{info.getValue()}</span>;
      },
    }),
    column.accessor('status', {
      header: 'Status',
      sortFn: 'text',
      meta: { width: '7rem' },
      cell: (info) => {
        const delivery = info.row.original;
        const reason = delivery.metadata.notSentReason ? NOT_SENT_REASONS[delivery.metadata.notSentReason] : undefined;
        return (
          <span
            className={`pill ${delivery.status === 'sent' ? 'pill--on' : 'pill--off'}`}
            data-testid="email-delivery-status"
            title={reason}
          >
            {info.getValue()}
          </span>
        );
      },
    }),
    column.accessor('attemptCount', {
      header: 'Attempts',
      sortFn: 'basic',
      meta: { width: '8rem', align: 'end' },
      cell: (info) => <span data-testid="email-delivery-attempts">{info.getValue()}</span>,
    }),
    whenColumn(column, 'lastAttemptAt', 'Last attempt', { width: '10rem' }),
    whenColumn(
      column,
      { id: 'next', at: (delivery) => (delivery.status === 'sent' ? delivery.sentAt : delivery.nextAttemptAt) },
      'Next / sent',
      { width: '9.5rem', description: 'When a waiting email is next tried; when a sent one went out' },
    ),
    whenColumn(column, 'createdAt', 'Created'),
    actionsColumn(column, (delivery) => {
      if (delivery.status !== 'pending' && delivery.status !== 'retrying') {
        return null;
      }
      return (
        <RowActions
          name={`the email to ${delivery.recipient}`}
          testId="email-delivery-actions"
          actions={[{ label: 'Send now', testId: 'email-delivery-send-now', disabled: busy, onSelect: () => void onSendNow(delivery) }]}
        />
      );
    }),
  ]);
}

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
  const busy = processing.isPending;
  // Rebuilt only when "busy" flips: the menu's item waits while a run is under way.
  // biome-ignore lint/correctness/useExhaustiveDependencies: `run` reads the slug, which the page's key changes with
  const columns = useMemo(() => deliveryColumns(busy, (delivery) => run([delivery.id])), [busy, slug]);

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
          action: { label: 'Invite someone', onClick: () => void navigate('/people/invitations') },
        }}
        above={() => (
          <form className="form-row" data-testid="email-deliveries-filters" onSubmit={(e) => e.preventDefault()}>
            <StatusFilter testId="email-deliveries-filter-status" options={STATUSES} value={status} onChange={setStatus} pager={pager} />
          </form>
        )}
        rowKey={(delivery) => delivery.id}
        table={{
          columns,
          rowAttributes: (delivery) => ({
            'data-testid': 'email-delivery-row',
            'data-delivery-id': delivery.id,
            'data-recipient': delivery.recipient,
            'data-status': delivery.status,
          }),
          minWidth: '72rem',
        }}
      />
    </div>
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

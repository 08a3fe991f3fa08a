import type { TWebhookDelivery } from '@svc/contracts/webhooks';
import { actionsColumn, columnHelper, whenColumn } from '../../components/data-table.tsx';
import { type RowAction, RowActions } from '../../components/row-actions.tsx';
import {
  DeliveryStatus,
  EndpointLabel,
  endpointName,
  isReplayable,
  isRetryable,
  ReplayPill,
  useDeliveries,
  useResend,
} from './delivery-parts.tsx';

const column = columnHelper<TWebhookDelivery>();

/**
 * The list's columns, sized to fit the panel at 1280 px: the event type (which opens the detail)
 * takes what the sized columns leave; times are relative, exact on hover. The cells read the
 * endpoints and the workspace from DeliveriesContext, so the definitions stay at module scope.
 */
export const DELIVERY_COLUMNS = column.columns([
  column.accessor('eventType', {
    header: 'Event type',
    sortFn: 'text',
    cell: (info) => <EventTypeCell delivery={info.row.original} />,
  }),
  column.accessor('endpointId', {
    header: 'Endpoint',
    enableSorting: false,
    meta: { width: '11rem' },
    cell: (info) => <EndpointLabel id={info.getValue()} testId="delivery-endpoint" />,
  }),
  column.accessor('status', {
    header: 'Status',
    sortFn: 'text',
    meta: { width: '9rem' },
    cell: (info) => <DeliveryStatus status={info.getValue()} testId="delivery-status" />,
  }),
  column.accessor('attemptCount', {
    header: 'Attempts',
    enableSorting: false,
    meta: { width: '6.5rem', align: 'end' },
    cell: (info) => <span data-testid="delivery-attempts">{info.getValue()}</span>,
  }),
  whenColumn(column, 'lastAttemptAt', 'Last attempt', { width: '10rem', empty: 'not yet' }),
  whenColumn(column, 'nextAttemptAt', 'Next retry', {
    width: '8.5rem',
    description: 'When the next attempt is due; none once the delivery is final',
  }),
  column.accessor('lastStatusCode', {
    header: 'Response',
    enableSorting: false,
    meta: { width: '6.5rem', description: "The last attempt's HTTP status (its outcome on hover)" },
    // The status code, or the outcome where the receiver gave none (timeout, refused).
    cell: (info) => {
      const d = info.row.original;
      return (
        <span data-testid="delivery-last" title={d.lastOutcome ?? 'Not attempted yet'}>
          {d.lastStatusCode !== null ? <code>{d.lastStatusCode}</code> : <span className="muted">{d.lastOutcome ?? '—'}</span>}
        </span>
      );
    },
  }),
  actionsColumn(column, (delivery) => <DeliveryActions delivery={delivery} />),
]);

/** The event type opens the delivery's detail; created time on hover (the list is newest first). */
function EventTypeCell({ delivery }: { delivery: TWebhookDelivery }) {
  const { open } = useDeliveries();
  return (
    <>
      <button
        type="button"
        className="link-button"
        onClick={() => open(delivery.id)}
        title={`Created ${new Date(delivery.createdAt).toLocaleString()}: open the delivery`}
        data-testid="delivery-open"
      >
        <code data-testid="delivery-event-type">{delivery.eventType}</code>
      </button>
      {delivery.replay && <ReplayPill />}
    </>
  );
}

/** The row's "⋯" menu: View details, then Retry… (failed or retrying) and Replay event… (not a test), each confirmed. */
function DeliveryActions({ delivery }: { delivery: TWebhookDelivery }) {
  const { open, endpoints } = useDeliveries();
  const resend = useResend(delivery);
  const actions: RowAction[] = [{ label: 'View details', testId: 'delivery-view', onSelect: () => open(delivery.id) }];
  if (isRetryable(delivery)) {
    actions.push({ label: 'Retry…', testId: 'delivery-retry', confirm: resend.retry });
  }
  if (isReplayable(delivery)) {
    actions.push({ label: 'Replay event…', testId: 'delivery-replay-action', confirm: resend.replay });
  }
  return (
    <RowActions
      name={`${delivery.eventType} to ${endpointName(endpoints, delivery.endpointId)}`}
      testId="delivery-actions"
      actions={actions}
    />
  );
}

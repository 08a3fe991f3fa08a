import type { TWebhookDelivery, TWebhookDeliveryAttempt, TWebhookDeliveryDetail } from '@svc/contracts/webhooks';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { CodeBlock } from '../../components/code-block.tsx';
import { ConfirmDialog } from '../../components/confirm-dialog.tsx';
import { Dialog } from '../../components/dialog.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { useTRPC } from '../../trpc.ts';
import {
  DeliveryStatus,
  EndpointLabel,
  isDue,
  isReplayable,
  isRetryable,
  LIVE_REFRESH_MS,
  ReplayPill,
  useDeliveries,
  useResend,
} from './delivery-parts.tsx';

/**
 * One delivery in a dialog (its id in the URL, so a link opens it): its state, the request body
 * svc signs and sends, and every attempt with the receiver's answer. Refreshes while it is due;
 * Retry and Replay are confirmed, and a replay shows the new delivery here once queued.
 */
export function DeliveryDetailDialog({ id, onClose }: { id: string; onClose: () => void }) {
  const trpc = useTRPC();
  const { organizationSlug } = useDeliveries();
  const detail = useQuery({
    ...trpc.webhooks.delivery.get.queryOptions({ id, organization_slug: organizationSlug }),
    refetchInterval: (query) => (query.state.data && isDue(query.state.data) ? LIVE_REFRESH_MS : false),
  });
  const d = detail.data;
  return (
    <Dialog
      open
      onOpenChange={(open) => !open && onClose()}
      title={d ? `${d.eventType} delivery` : 'Delivery'}
      description="Signatures and signing secrets never appear here."
      wide
      testId="delivery-detail-dialog"
      footer={
        <>
          {d && <ResendButtons delivery={d} />}
          <button type="button" className="button" onClick={onClose} data-testid="delivery-detail-close">
            Close
          </button>
        </>
      }
    >
      <div className="detail-stack" data-testid="delivery-detail" data-delivery-id={id}>
        {detail.isPending && <Skeleton label="Loading the delivery…" testId="delivery-detail-loading" lines={6} />}
        {detail.isError && <ErrorPanel error={detail.error} title="Could not load the delivery" onRetry={() => void detail.refetch()} />}
        {d && <DeliveryFacts delivery={d} />}
      </div>
    </Dialog>
  );
}

/** Retry now (failed or retrying) and Replay (not a test event), each through its ConfirmDialog. */
function ResendButtons({ delivery }: { delivery: TWebhookDelivery }) {
  const resend = useResend(delivery);
  const [confirming, setConfirming] = useState<'retry' | 'replay' | null>(null);
  return (
    <>
      {isReplayable(delivery) && (
        <button type="button" className="button" onClick={() => setConfirming('replay')} data-testid="delivery-replay-button">
          Replay…
        </button>
      )}
      {isRetryable(delivery) && (
        <button type="button" className="button button--primary" onClick={() => setConfirming('retry')} data-testid="delivery-detail-retry">
          Retry now…
        </button>
      )}
      {confirming && <ConfirmDialog {...resend[confirming]} open onOpenChange={(open) => !open && setConfirming(null)} />}
    </>
  );
}

/** The request as svc sends it (webhookBody: id, type, timestamp, data), pretty-printed. */
function requestBody(d: TWebhookDeliveryDetail): string {
  return JSON.stringify({ id: d.event.id, type: d.event.type, timestamp: d.event.createdAt, data: d.event.data }, null, 2);
}

function DeliveryFacts({ delivery: d }: { delivery: TWebhookDeliveryDetail }) {
  return (
    <>
      <dl className="facts">
        <dt>Status</dt>
        <dd>
          <DeliveryStatus status={d.status} testId="delivery-detail-status" />
          {d.replay && <ReplayPill />}
        </dd>
        <dt>Endpoint</dt>
        <dd>
          <EndpointLabel id={d.endpointId} testId="delivery-detail-endpoint" />
        </dd>
        <dt>Delivery</dt>
        <dd>
          <Identifier value={d.id} label="delivery id" testId="delivery-detail-id" />
        </dd>
        <dt title="The webhook-id header: the same on every delivery of this event">Event (webhook-id)</dt>
        <dd>
          <Identifier value={d.eventId} label="event id" testId="delivery-detail-event-id" />
        </dd>
        <dt>Created</dt>
        <dd>
          <When at={d.createdAt} empty="—" />
        </dd>
        <dt>Next attempt</dt>
        <dd>
          <When at={d.nextAttemptAt} empty={d.status === 'succeeded' ? 'none: delivered' : 'none'} />
        </dd>
        <dt>Delivered</dt>
        <dd>
          <When at={d.succeededAt} empty="not yet" />
        </dd>
      </dl>
      <section>
        <h3 className="panel__title">Request body</h3>
        <CodeBlock label="Request body" testId="delivery-event-data">
          {requestBody(d)}
        </CodeBlock>
      </section>
      <section>
        <h3 className="panel__title">Attempts</h3>
        {d.attempts.length === 0 ? (
          <p className="muted" data-testid="delivery-no-attempts">
            Not attempted yet.
          </p>
        ) : (
          <ol className="attempt-list" data-testid="delivery-attempts-log">
            {d.attempts.map((a) => (
              <Attempt key={a.attemptNumber} attempt={a} />
            ))}
          </ol>
        )}
      </section>
    </>
  );
}

/** One attempt: number, start, duration, HTTP status and outcome, then the error and the receiver's answer. */
function Attempt({ attempt: a }: { attempt: TWebhookDeliveryAttempt }) {
  return (
    <li data-testid="delivery-attempt" data-outcome={a.outcome}>
      <div className="panel__header">
        <span>
          <strong>#{a.attemptNumber}</strong> <When at={a.startedAt} empty="—" /> <span className="muted">· {a.durationMs} ms</span>
        </span>
        <span>
          HTTP <code data-testid="delivery-attempt-status">{a.statusCode ?? '—'}</code> <span className="muted">{a.outcome}</span>
        </span>
      </div>
      {a.error && <p className="muted">{a.error}</p>}
      {a.responseExcerpt && (
        <CodeBlock label={`Response to attempt ${a.attemptNumber}`} testId="delivery-attempt-response">
          {a.responseExcerpt}
        </CodeBlock>
      )}
    </li>
  );
}

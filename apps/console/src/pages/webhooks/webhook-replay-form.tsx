import {
  type TWebhookEndpoint,
  type TWebhookReplayBody,
  type TWebhookReplayResponse,
  WEBHOOK_REPLAY_MAX_EVENTS,
  WEBHOOK_REPLAY_MAX_RANGE_DAYS,
  ZWebhookReplayBody,
} from '@svc/contracts/webhooks';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { useForm } from 'react-hook-form';
import { Link } from 'react-router';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { useTRPC } from '../../trpc.ts';

type Values = { from: string; to: string; types: string[] };

/** `YYYY-MM-DDTHH:mm` in local time, what a datetime-local input holds. */
function localInput(at: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}T${pad(at.getHours())}:${pad(at.getMinutes())}`;
}

/** A datetime-local value (local time) as an ISO instant; '' stays '' and fails the contract. */
const toInstant = (value: string) => (value ? new Date(value).toISOString() : '');

/**
 * Re-sends every event of a time range (of some of the endpoint's types) to this endpoint:
 * the range is checked with the contract's body schema, then a dialog names what will be sent
 * before POST /v1/webhook-endpoints/{id}/replay. The API's refusals (too many events, a range
 * too long, the endpoint disabled, the replay budget spent) are shown as they come.
 */
export function WebhookReplayForm({
  endpoint,
  organizationSlug,
  onClose,
}: {
  endpoint: TWebhookEndpoint;
  organizationSlug: string;
  onClose: () => void;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const replay = useMutation(
    trpc.webhooks.endpoint.replay.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.webhooks.delivery.pathKey() }),
    }),
  );
  const now = new Date();
  const form = useForm<Values>({
    defaultValues: { from: localInput(new Date(now.getTime() - 3_600_000)), to: localInput(now), types: endpoint.eventTypes },
  });
  const dialog = useRef<HTMLDialogElement>(null);
  const [body, setBody] = useState<TWebhookReplayBody | null>(null);
  const [invalid, setInvalid] = useState<string | null>(null);
  const [queued, setQueued] = useState<TWebhookReplayResponse | null>(null);

  const review = form.handleSubmit((values) => {
    const parsed = ZWebhookReplayBody.safeParse({
      from: toInstant(values.from),
      to: toInstant(values.to),
      // All of the endpoint's types is the API's default; naming them changes nothing.
      types: values.types.length === endpoint.eventTypes.length ? undefined : values.types,
    });
    if (!parsed.success) {
      setInvalid(parsed.error.issues.map((i) => i.message).join('; '));
      return;
    }
    if (values.types.length === 0) {
      setInvalid('choose at least one event type');
      return;
    }
    setInvalid(null);
    setBody(parsed.data);
    dialog.current?.showModal();
  });

  const confirm = async () => {
    if (!body) {
      return;
    }
    const done = await replay.mutateAsync({ id: endpoint.id, organization_slug: organizationSlug, ...body }).catch(() => undefined);
    dialog.current?.close();
    if (done) {
      setQueued(done);
    }
  };

  return (
    <form onSubmit={review} noValidate data-testid="webhook-replay-form">
      <p className="muted" style={{ marginTop: 0 }}>
        Re-sends every event of the range to this endpoint only, oldest first, each as a new delivery with its original{' '}
        <code>webhook-id</code> (receivers that already have it can drop it). At most {WEBHOOK_REPLAY_MAX_EVENTS.toLocaleString()} events
        over at most {WEBHOOK_REPLAY_MAX_RANGE_DAYS} days.
      </p>
      <div className="form-row">
        <label className="form-field">
          <span>From (inclusive)</span>
          <input type="datetime-local" data-testid="webhook-replay-from" {...form.register('from')} />
        </label>
        <label className="form-field">
          <span>To (exclusive)</span>
          <input type="datetime-local" data-testid="webhook-replay-to" {...form.register('to')} />
        </label>
      </div>
      <fieldset style={{ border: '1px solid var(--border)', borderRadius: 8, padding: '8px 12px' }}>
        <legend>Event types</legend>
        {endpoint.eventTypes.map((type) => (
          <label key={type} style={{ display: 'inline-flex', gap: 6, marginRight: 16 }}>
            <input type="checkbox" value={type} data-testid={`webhook-replay-type-${type}`} {...form.register('types')} />
            <code>{type}</code>
          </label>
        ))}
      </fieldset>
      {invalid && (
        <span className="form-field__error" data-testid="webhook-replay-invalid">
          {invalid}
        </span>
      )}
      <div className="form-row">
        <button type="submit" className="button button--primary" disabled={replay.isPending} data-testid="webhook-replay-review">
          Replay…
        </button>
        <button type="button" className="button" onClick={onClose}>
          Close
        </button>
      </div>
      <dialog ref={dialog} className="confirm-dialog" data-testid="webhook-replay-dialog">
        <p className="confirm-dialog__question">
          Replay the events from {body ? new Date(body.from as string).toLocaleString() : ''} to{' '}
          {body ? new Date(body.to as string).toLocaleString() : ''} to {endpoint.url}?
        </p>
        <p className="muted">
          Every {(body?.types ?? endpoint.eventTypes).join(', ')} event of that range is sent again to this endpoint, and to no other.
        </p>
        <div className="confirm-dialog__actions">
          <button type="button" className="button" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
          <button
            type="button"
            className="button button--primary"
            disabled={replay.isPending}
            onClick={() => void confirm()}
            data-testid="confirm"
          >
            Replay
          </button>
        </div>
      </dialog>
      {replay.isError && <ErrorPanel error={replay.error} title="Could not replay the events" />}
      {queued && (
        <p className="muted" data-testid="webhook-replay-queued" data-count={queued.count}>
          {queued.count === 0
            ? 'No events in that range: nothing was queued.'
            : `${queued.count.toLocaleString()} ${queued.count === 1 ? 'delivery' : 'deliveries'} queued. `}
          {queued.count > 0 && (
            <Link to={`/webhook-deliveries?endpoint_id=${endpoint.id}`} data-testid="webhook-replay-deliveries">
              See the deliveries
            </Link>
          )}
        </p>
      )}
    </form>
  );
}

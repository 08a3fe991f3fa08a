import {
  type TWebhookEndpoint,
  type TWebhookReplayBody,
  type TWebhookReplayResponse,
  WEBHOOK_REPLAY_MAX_EVENTS,
  WEBHOOK_REPLAY_MAX_RANGE_DAYS,
  ZWebhookReplayBody,
} from '@svc/contracts/webhooks';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { Link } from 'react-router';
import { ConfirmDialog } from '../../components/confirm-dialog.tsx';
import { FormDialog } from '../../components/dialog.tsx';
import { Field, FieldSet } from '../../components/field.tsx';
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
 * Re-sends every event of a time range (of some of the endpoint's types) to this endpoint, in a
 * FormDialog: the range is checked with the contract's body schema, then a ConfirmDialog names what
 * will be sent before POST /v1/webhook-endpoints/{id}/replay. The API's refusals (too many events,
 * a range too long, the endpoint disabled, the replay budget spent) stay in the confirmation.
 */
export function WebhookReplayDialog({
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
  const [now] = useState(() => new Date());
  const form = useForm<Values>({
    defaultValues: { from: localInput(new Date(now.getTime() - 3_600_000)), to: localInput(now), types: endpoint.eventTypes },
  });
  const [body, setBody] = useState<TWebhookReplayBody | null>(null);
  const [invalid, setInvalid] = useState<string | null>(null);
  const [queued, setQueued] = useState<TWebhookReplayResponse | null>(null);

  const review = form.handleSubmit(async (values) => {
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
      setInvalid('Choose at least one event type.');
      return;
    }
    setInvalid(null);
    setQueued(null);
    setBody(parsed.data);
  });

  return (
    <FormDialog
      open
      onOpenChange={(next) => !next && onClose()}
      title="Replay events"
      description={
        <>
          Re-sends every event of the range to <code>{endpoint.url}</code> only, oldest first, each as a new delivery with its original{' '}
          <code>webhook-id</code> (receivers that already have it can drop it). At most {WEBHOOK_REPLAY_MAX_EVENTS.toLocaleString()} events
          over at most {WEBHOOK_REPLAY_MAX_RANGE_DAYS} days.
        </>
      }
      onSubmit={review}
      submitLabel="Replay…"
      pending={replay.isPending}
      testId="webhook-replay"
    >
      <div className="form-grid">
        <Field label="From (inclusive)">
          {(control) => <input {...control} type="datetime-local" data-testid="webhook-replay-from" {...form.register('from')} />}
        </Field>
        <Field label="To (exclusive)">
          {(control) => <input {...control} type="datetime-local" data-testid="webhook-replay-to" {...form.register('to')} />}
        </Field>
      </div>
      <FieldSet legend="Event types" error={invalid ?? undefined} testId="webhook-replay-types">
        <div className="check-grid">
          {endpoint.eventTypes.map((type) => (
            <label key={type} className="check">
              <input type="checkbox" value={type} data-testid={`webhook-replay-type-${type}`} {...form.register('types')} />
              <code>{type}</code>
            </label>
          ))}
        </div>
      </FieldSet>
      {queued && (
        <p className="muted" data-testid="webhook-replay-queued" data-count={queued.count} role="status">
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
      <ConfirmDialog
        open={body !== null}
        onOpenChange={(next) => !next && setBody(null)}
        title={`Replay the events from ${body ? new Date(body.from as string).toLocaleString() : ''} to ${
          body ? new Date(body.to as string).toLocaleString() : ''
        }?`}
        consequence={`Every ${(body?.types ?? endpoint.eventTypes).join(', ')} event of that range is sent again to ${endpoint.url}, and to no other endpoint.`}
        confirmLabel="Replay"
        tone="primary"
        testId="webhook-replay-dialog"
        onConfirm={async () => {
          if (body) {
            setQueued(await replay.mutateAsync({ id: endpoint.id, organization_slug: organizationSlug, ...body }));
          }
        }}
      />
    </FormDialog>
  );
}

import { TEST_EVENT_TYPE } from '@svc/contracts/events';
import type { TWebhookDelivery, TWebhookEndpoint } from '@svc/contracts/webhooks';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { createContext, useContext } from 'react';
import type { ConfirmDialogProps } from '../../components/confirm-dialog.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { useTRPC } from '../../trpc.ts';

/** While a shown delivery is still due, the list and the detail refresh at this pace. */
export const LIVE_REFRESH_MS = 2000;

export const isDue = (d: Pick<TWebhookDelivery, 'status'>) => d.status === 'pending' || d.status === 'retrying';
export const isRetryable = (d: Pick<TWebhookDelivery, 'status'>) => d.status === 'failed' || d.status === 'retrying';
/** A test event is not stored for replay: only catalogued events are replayed. */
export const isReplayable = (d: Pick<TWebhookDelivery, 'eventType'>) => d.eventType !== TEST_EVENT_TYPE;

type EndpointFacts = Pick<TWebhookEndpoint, 'url' | 'description'>;

/** What the list's cells and the detail need from the page: the workspace, the endpoints, opening a delivery. */
export type DeliveriesContextValue = {
  organizationSlug: string;
  endpoints: ReadonlyMap<string, EndpointFacts>;
  /** Opens a delivery's detail (its id in the URL). */
  open: (deliveryId: string) => void;
};

export const DeliveriesContext = createContext<DeliveriesContextValue | null>(null);

export function useDeliveries(): DeliveriesContextValue {
  const value = useContext(DeliveriesContext);
  if (!value) {
    throw new Error('useDeliveries outside DeliveriesContext');
  }
  return value;
}

/** An endpoint as people know it: its description, else its URL, else (not loaded, or deleted) its id. */
export function endpointName(endpoints: ReadonlyMap<string, EndpointFacts>, id: string): string {
  const endpoint = endpoints.get(id);
  return endpoint?.description || endpoint?.url || id;
}

/** The endpoint of a delivery: its description (URL on hover), or its URL or id as an Identifier. */
export function EndpointLabel({ id, testId }: { id: string; testId?: string }) {
  const { endpoints } = useDeliveries();
  const endpoint = endpoints.get(id);
  if (endpoint?.description) {
    return (
      <span title={endpoint.url} data-testid={testId}>
        {endpoint.description}
      </span>
    );
  }
  return endpoint ? (
    <Identifier value={endpoint.url} label="endpoint URL" tail={12} testId={testId} />
  ) : (
    <Identifier value={id} label="endpoint id" testId={testId} />
  );
}

const STATUS_TONE: Record<TWebhookDelivery['status'], string> = {
  succeeded: 'pill--on',
  failed: 'pill--danger',
  pending: 'pill--off',
  retrying: 'pill--off',
};

export function DeliveryStatus({ status, testId }: { status: TWebhookDelivery['status']; testId: string }) {
  return (
    <span className={`pill ${STATUS_TONE[status]}`} data-testid={testId}>
      {status}
    </span>
  );
}

/** Marks a delivery a replay queued (beside the event's live delivery to the same endpoint). */
export function ReplayPill() {
  return (
    <span className="pill pill--off" style={{ marginLeft: 6 }} title="Queued by a replay" data-testid="delivery-replay">
      replay
    </span>
  );
}

type Confirm = Omit<ConfirmDialogProps, 'open' | 'onOpenChange' | 'returnFocusTo'>;

/**
 * Retry and Replay of one delivery, each as the confirmation it needs (both send the event to the
 * receiver again), for the row menu and the detail alike. Replay opens the new delivery once queued.
 */
export function useResend(delivery: TWebhookDelivery): { retry: Confirm; replay: Confirm } {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const { organizationSlug, endpoints, open } = useDeliveries();
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.webhooks.delivery.pathKey() });
  const retry = useMutation(trpc.webhooks.delivery.retry.mutationOptions({ onSuccess: refresh }));
  const replay = useMutation(trpc.webhooks.endpoint.replay.mutationOptions({ onSuccess: refresh }));
  const target = endpoints.get(delivery.endpointId)?.url ?? endpointName(endpoints, delivery.endpointId);
  return {
    retry: {
      title: `Retry this ${delivery.eventType} delivery now?`,
      consequence: `svc sends it to ${target} again at once, as a new attempt with the same webhook-id.`,
      confirmLabel: 'Retry now',
      tone: 'primary',
      testId: 'delivery-retry-dialog',
      onConfirm: () => retry.mutateAsync({ id: delivery.id, organization_slug: organizationSlug }),
    },
    replay: {
      title: `Replay ${delivery.eventType} to ${endpointName(endpoints, delivery.endpointId)}?`,
      consequence: `A new delivery of event ${delivery.eventId} is queued for ${target} only, with the same webhook-id, whatever became of this one.`,
      confirmLabel: 'Replay',
      tone: 'primary',
      testId: 'delivery-replay-dialog',
      onConfirm: async () => {
        const res = await replay.mutateAsync({ id: delivery.endpointId, organization_slug: organizationSlug, eventId: delivery.eventId });
        if (res.delivery) {
          open(res.delivery.id);
        }
      },
    },
  };
}

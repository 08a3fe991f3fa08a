import type { TWebhookDeliveryFilters } from '@svc/contracts/webhooks';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useMemo, useRef } from 'react';
import { useNavigate, useSearchParams } from 'react-router';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';
import { DELIVERY_COLUMNS } from './delivery-columns.tsx';
import { DeliveryDetailDialog } from './delivery-detail-dialog.tsx';
import { DeliveryFilters } from './delivery-filters.tsx';
import { DeliveriesContext, type DeliveriesContextValue, isDue, LIVE_REFRESH_MS } from './delivery-parts.tsx';

const PAGE_SIZE = 50;

/**
 * Webhook deliveries of the active organization: filters (kept in the URL, so the endpoints page
 * can link here), newest first with Previous / Next; a delivery opens in a dialog (`?delivery=`)
 * with its request body and attempts. Retry (failed or retrying) and Replay of its event (a new
 * delivery, labelled `replay`) are in the row menu and the dialog, each confirmed.
 */
export function WebhookDeliveriesPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const pager = usePager();
  const navigate = useNavigate();
  const [params, setParams] = useSearchParams();
  const filters: TWebhookDeliveryFilters = {
    endpoint_id: params.get('endpoint_id') ?? undefined,
    status: (params.get('status') ?? undefined) as TWebhookDeliveryFilters['status'],
    event_type: params.get('event_type') ?? undefined,
  };
  const selected = params.get('delivery');
  const organizationSlug = active.organization?.slug;

  const endpointList = useQuery(
    trpc.webhooks.endpoint.list.queryOptions(
      { organization_slug: organizationSlug, limit: 200 },
      { enabled: organizationSlug !== undefined },
    ),
  );
  const deliveries = useQuery({
    ...trpc.webhooks.delivery.list.queryOptions(
      { organization_slug: organizationSlug, ...filters, limit: PAGE_SIZE, cursor: pager.cursor },
      { enabled: organizationSlug !== undefined },
    ),
    placeholderData: keepPreviousData,
    refetchInterval: (query) => (query.state.data?.data.some(isDue) ? LIVE_REFRESH_MS : false),
  });

  const setSearch = (next: TWebhookDeliveryFilters & { delivery?: string | null }) => {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(next)) {
      if (typeof value === 'string' && value !== '') {
        search.set(key, value);
      }
    }
    setParams(search);
  };
  /** A filter applies as soon as it changes: the list starts again at its first page. */
  const narrow = (change: Partial<TWebhookDeliveryFilters>) => {
    setSearch({ ...filters, ...change });
    pager.reset();
  };
  const clear = () => {
    setSearch({});
    pager.reset();
  };
  const select = (id: string | null) => setSearch({ ...filters, delivery: id });
  const filtered = Object.values(filters).some((v) => v !== undefined);

  // The cells' `open` goes through a ref, so the context (and every row) only changes with the
  // workspace and the endpoints, not with each render's new `select`.
  const selectRef = useRef(select);
  selectRef.current = select;
  const context = useMemo<DeliveriesContextValue | null>(
    () =>
      organizationSlug === undefined
        ? null
        : {
            organizationSlug,
            endpoints: new Map((endpointList.data?.data ?? []).map((e) => [e.id, { url: e.url, description: e.description }])),
            open: (id) => selectRef.current(id),
          },
    [organizationSlug, endpointList.data],
  );

  return (
    <div data-testid="page-webhook-deliveries">
      <PageHeader
        title="Webhook deliveries"
        description="Each event sent to each endpoint, with every attempt. Signing secrets never appear here."
      />
      <DeliveriesContext.Provider value={context}>
        <ListPage
          testId="deliveries"
          noun="deliveries"
          workspace={active}
          query={deliveries}
          pager={pager}
          filtered={filtered ? { title: 'No deliveries match these filters.', clear } : undefined}
          empty={{
            title: 'No deliveries yet.',
            next: 'Each event svc sends to an endpoint appears here, with every attempt. Send a test event from the Webhooks page.',
            action: { label: 'Open Webhooks', onClick: () => void navigate('/webhooks') },
          }}
          above={() => (
            <>
              <DeliveryFilters
                filters={filters}
                onChange={narrow}
                onClear={filtered ? clear : undefined}
                onRefresh={() => void deliveries.refetch()}
              />
              {selected && context && <DeliveryDetailDialog id={selected} onClose={() => select(null)} />}
            </>
          )}
          rowKey={(delivery) => delivery.id}
          table={{
            columns: DELIVERY_COLUMNS,
            rowAttributes: (delivery) => ({
              'data-testid': 'delivery-row',
              'data-delivery-id': delivery.id,
              'data-status': delivery.status,
            }),
            minWidth: '62rem',
          }}
        />
      </DeliveriesContext.Provider>
    </div>
  );
}

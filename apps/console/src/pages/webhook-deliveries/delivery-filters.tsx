import { TEST_EVENT_TYPE } from '@svc/contracts/events';
import { type TWebhookDeliveryFilters, WEBHOOK_DELIVERY_STATUSES, WEBHOOK_EVENT_TYPE_CATALOG } from '@svc/contracts/webhooks';
import { Select, type SelectOption } from '../../components/select.tsx';
import { StatusFilter } from '../../components/status-filter.tsx';
import { useDeliveries } from './delivery-parts.tsx';

/** The no-filter option of a Select (whose values are never ''). */
const ANY = 'any';

const EVENT_TYPE_OPTIONS: SelectOption<string>[] = [
  { value: ANY, label: 'Any event type' },
  { value: TEST_EVENT_TYPE, label: TEST_EVENT_TYPE },
  ...WEBHOOK_EVENT_TYPE_CATALOG.map((t) => ({ value: t.type, label: t.type })),
];

type DeliveryFiltersProps = {
  filters: TWebhookDeliveryFilters;
  /** A filter applies as soon as it changes. */
  onChange: (change: Partial<TWebhookDeliveryFilters>) => void;
  /** Given while a filter is on: Clear removes them all. */
  onClear: (() => void) | undefined;
  /** Loads the page on screen again (it refreshes by itself only while a delivery is due). */
  onRefresh: () => void;
};

/** The list's toolbar: endpoint, status and event type (each applied at once), then Clear and Refresh. */
export function DeliveryFilters({ filters, onChange, onClear, onRefresh }: DeliveryFiltersProps) {
  const { endpoints } = useDeliveries();
  // The filter's endpoint stays an option before and after the list loads (its id until then),
  // so the select keeps showing it.
  const endpointOptions: SelectOption<string>[] = [
    { value: ANY, label: 'Any endpoint' },
    ...[...endpoints].map(([id, e]) => ({ value: id, label: e.description ? `${e.description} (${e.url})` : e.url })),
  ];
  if (filters.endpoint_id && !endpoints.has(filters.endpoint_id)) {
    endpointOptions.push({ value: filters.endpoint_id, label: filters.endpoint_id });
  }
  return (
    <div className="form-row" data-testid="deliveries-filters">
      <div className="form-field">
        <label htmlFor="deliveries-filter-endpoint">Endpoint</label>
        <Select
          id="deliveries-filter-endpoint"
          value={filters.endpoint_id ?? ANY}
          options={endpointOptions}
          testId="deliveries-filter-endpoint"
          onValueChange={(value) => onChange({ endpoint_id: value === ANY ? undefined : value })}
        />
      </div>
      <StatusFilter
        testId="deliveries-filter-status"
        anyLabel="Any status"
        options={WEBHOOK_DELIVERY_STATUSES}
        value={filters.status ?? ''}
        onChange={(value) => onChange({ status: value === '' ? undefined : value })}
      />
      <div className="form-field">
        <label htmlFor="deliveries-filter-event-type">Event type</label>
        <Select
          id="deliveries-filter-event-type"
          value={filters.event_type ?? ANY}
          options={EVENT_TYPE_OPTIONS}
          testId="deliveries-filter-event-type"
          onValueChange={(value) => onChange({ event_type: value === ANY ? undefined : value })}
        />
      </div>
      <button type="button" className="button" onClick={onClear} disabled={!onClear} data-testid="deliveries-filter-clear">
        Clear filters
      </button>
      <button type="button" className="button" onClick={onRefresh} data-testid="deliveries-refresh">
        Refresh
      </button>
    </div>
  );
}

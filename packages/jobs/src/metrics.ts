import { Counter, Histogram, register } from 'prom-client';

/**
 * The job worker's metrics (docs/operations.md "Metrics"), on prom-client's default registry,
 * which the API process serves at /metrics. Labels name kinds of things, never a user, key,
 * organization, endpoint or URL.
 */
function counter(name: string, help: string, labelNames: readonly string[]): Counter<string> {
  return (register.getSingleMetric(name) as Counter<string> | undefined) ?? new Counter({ name, help, labelNames });
}

function histogram(name: string, help: string, labelNames: readonly string[], buckets: number[]): Histogram<string> {
  return (register.getSingleMetric(name) as Histogram<string> | undefined) ?? new Histogram({ name, help, labelNames, buckets });
}

/** Webhook delivery attempts by outcome (`succeeded`, `http_error`, `timeout`, ...). */
export const webhookDeliveries = counter('svc_webhook_deliveries_total', 'Webhook delivery attempts, by outcome.', ['outcome']);

/** How long a webhook delivery attempt took, by outcome. */
export const webhookDeliverySeconds = histogram(
  'svc_webhook_delivery_duration_seconds',
  'Duration of webhook delivery attempts, by outcome.',
  ['outcome'],
  [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
);

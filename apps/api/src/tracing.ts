import type { IncomingMessage } from 'node:http';
// The API alone (no SDK): a global registry the SDK fills when it starts, a no-op until then.
import { type Span, trace } from '@opentelemetry/api';
import type { SpanProcessor } from '@opentelemetry/sdk-trace';
import type { Config } from './env.ts';

/**
 * OpenTelemetry traces (docs/operations.md "Traces"), on only when OTEL_EXPORTER_OTLP_ENDPOINT is
 * set: the SDK, its instrumentations and the OTLP exporter are loaded by `startTracing` and by
 * nothing else, so a process without it pays nothing. Spans of incoming and outgoing HTTP
 * (node:http), Express's routes and middleware, and node-postgres (the job queue's driver) go to
 * `<endpoint>/v1/traces` as OTLP over HTTP. Every span carries the request id (`svc.request_id`)
 * of the request it belongs to, and every log line the trace and span ids.
 */

export type Tracing = {
  /** pino's mixin: `{ trace_id, span_id }` of the active span, nothing outside one. */
  logFields: () => Record<string, string>;
  /** Flushes the spans not yet sent, then stops. */
  shutdown: () => Promise<void>;
};

/** The attribute that carries svc's request id (the X-Request-Id answered) on each span. */
export const REQUEST_ID_ATTRIBUTE = 'svc.request_id';

/**
 * Starts tracing before the modules it instruments are loaded: `svc serve` and `svc worker` call
 * it before they import the server or the worker. ESM imports are hooked through
 * import-in-the-middle's loader, told only about the modules an instrumentation asks for.
 */
export async function startTracing(config: Pick<Config, 'tracing'>): Promise<Tracing | null> {
  const { endpoint, serviceName } = config.tracing;
  if (endpoint === null) {
    return null;
  }
  const { register } = await import('node:module');
  const { createAddHookMessageChannel } = await import('import-in-the-middle');
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);
  const [
    otel,
    { NodeSDK },
    { BatchSpanProcessor },
    { OTLPTraceExporter },
    { HttpInstrumentation },
    { ExpressInstrumentation },
    { PgInstrumentation },
  ] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-express'),
    import('@opentelemetry/instrumentation-pg'),
  ]);
  // A span started inside a request's span inherits its request id (the edge sets it on the
  // request's own span): "the request id in every span", database and middleware spans too.
  const requestIdToChildren: SpanProcessor = {
    onStart(span, parentContext) {
      const parent = otel.trace.getSpan(parentContext) as unknown as { attributes?: Record<string, unknown> } | undefined;
      const id = parent?.attributes?.[REQUEST_ID_ATTRIBUTE];
      if (typeof id === 'string') {
        span.setAttribute(REQUEST_ID_ATTRIBUTE, id);
      }
    },
    onEnd() {},
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
  const sdk = new NodeSDK({
    serviceName,
    spanProcessors: [
      requestIdToChildren,
      new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces` }) }),
    ],
    instrumentations: [new HttpInstrumentation(), new ExpressInstrumentation(), new PgInstrumentation()],
    // Traces only: metrics are Prometheus' (/metrics) and logs go to stdout. Without these the SDK
    // would also push its own metrics and logs to the same endpoint, read from OTEL_* settings.
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  await waitForAllMessagesAcknowledged();
  return {
    logFields: (): Record<string, string> => {
      const span = otel.trace.getSpan(otel.context.active());
      if (!span) {
        return {};
      }
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
    shutdown: () => sdk.shutdown(),
  };
}

const REQUEST_SPAN = Symbol('svc request span');
type Traced = IncomingMessage & { id?: string; [REQUEST_SPAN]?: Span };

/**
 * Remembers the request's own span (node:http's server span, active when the server's request
 * handler starts): by the time the edge has the request id, the active span may be an Express
 * middleware's.
 */
export function rememberRequestSpan(req: IncomingMessage): void {
  const span = trace.getActiveSpan();
  if (span) {
    (req as Traced)[REQUEST_SPAN] = span;
  }
}

/** Puts the request id on the request's span and the active one (the edge calls it once tracing runs). */
export function tagRequestSpan(req: Traced): void {
  if (req.id) {
    req[REQUEST_SPAN]?.setAttribute(REQUEST_ID_ATTRIBUTE, req.id);
    trace.getActiveSpan()?.setAttribute(REQUEST_ID_ATTRIBUTE, req.id);
  }
}

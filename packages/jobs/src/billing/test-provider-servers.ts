import type http from 'node:http';
import { type ReceivedRequest, type Receiver, startReceiver } from '../webhooks/test-receivers.ts';

/**
 * Local stand-ins for the providers' hosted APIs, for the billing-sync tests: real HTTP servers
 * that record every request the official SDKs send and answer the way the provider would (the
 * shapes the SDKs parse), or fail as a test scripts it. Only the providers' hosted APIs are faked;
 * the SDKs are the real ones, pointed here through their API base settings.
 */

/** What the next request gets: the provider's success answer, an HTTP error status, or no answer at all. */
export type Scripted = 'ok' | number | 'hang';

export type ProviderServer = Receiver & {
  /** Answers for the coming requests, in order; once spent, every request succeeds. */
  script: (...answers: Scripted[]) => void;
  /** Requests other than reads (GET). */
  writes: () => ReceivedRequest[];
};

type Answer = (req: ReceivedRequest) => { status: number; body: unknown };

async function start(ok: Answer, fail: (status: number, req: ReceivedRequest) => unknown): Promise<ProviderServer> {
  const queue: Scripted[] = [];
  const hanging: http.ServerResponse[] = [];
  const receiver = await startReceiver((req, res) => {
    const next = queue.shift() ?? 'ok';
    if (next === 'hang') {
      hanging.push(res);
      return;
    }
    const { status, body } = next === 'ok' ? ok(req) : { status: next, body: fail(next, req) };
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${receiver.requests.length}` });
    res.end(JSON.stringify(body));
  });
  return {
    ...receiver,
    script: (...answers) => {
      queue.push(...answers);
    },
    writes: () => receiver.requests.filter((r) => r.method !== 'GET'),
    close: async () => {
      for (const res of hanging) {
        res.destroy();
      }
      await receiver.close();
    },
  };
}

/** Stripe: POST /v1/billing/meter_events (form-encoded), answered with the meter event. */
export function startStripeServer(): Promise<ProviderServer> {
  return start(
    (req) => {
      const form = new URLSearchParams(req.body);
      return {
        status: 200,
        body: {
          object: 'billing.meter_event',
          created: Math.floor(Date.now() / 1000),
          event_name: form.get('event_name'),
          identifier: form.get('identifier'),
          livemode: false,
          payload: { value: form.get('payload[value]'), stripe_customer_id: form.get('payload[stripe_customer_id]') },
          timestamp: Number(form.get('timestamp')),
        },
      };
    },
    (status, req) => ({
      error: {
        type: status >= 500 ? 'api_error' : 'invalid_request_error',
        code: status >= 500 ? undefined : 'resource_missing',
        // A careless provider quoting the credential it was sent: svc must not pass it on.
        message: `No such meter (request authorized as ${req.headers.authorization ?? 'nobody'})`,
      },
    }),
  );
}

/** Razorpay: GET /v1/items/{id} and POST /v1/subscriptions/{id}/addons (JSON). */
export function startRazorpayServer(): Promise<ProviderServer> {
  let n = 0;
  return start(
    (req) => {
      const item = /^\/v1\/items\/([^/?]+)/.exec(req.url);
      if (req.method === 'GET' && item) {
        return { status: 200, body: { id: item[1], active: true, name: 'API calls', description: null, amount: 250, currency: 'INR' } };
      }
      const addon = /^\/v1\/subscriptions\/([^/?]+)\/addons$/.exec(req.url);
      if (req.method === 'POST' && addon) {
        const body = JSON.parse(req.body) as { item: Record<string, unknown>; quantity: number };
        return {
          status: 200,
          body: {
            id: `ao_${String(++n).padStart(14, '0')}`,
            entity: 'addon',
            item: { id: `item_${n}`, ...body.item },
            quantity: body.quantity,
            created_at: Math.floor(Date.now() / 1000),
            subscription_id: addon[1],
            invoice_id: null,
          },
        };
      }
      return { status: 404, body: { error: { code: 'BAD_REQUEST_ERROR', description: 'The requested URL was not found on the server.' } } };
    },
    (status) => ({
      error: {
        code: status >= 500 ? 'SERVER_ERROR' : 'BAD_REQUEST_ERROR',
        description: status >= 500 ? 'Something went wrong' : 'The id provided does not exist',
      },
    }),
  );
}

/** Paddle: POST /subscriptions/{id}/charge, answered with the subscription in `data`. */
export function startPaddleServer(): Promise<ProviderServer> {
  return start(
    (req) => {
      const charge = /^\/subscriptions\/([^/?]+)\/charge$/.exec(req.url);
      if (req.method === 'POST' && charge) {
        return {
          status: 200,
          body: {
            data: {
              id: charge[1],
              status: 'active',
              customer_id: 'ctm_01',
              address_id: 'add_01',
              currency_code: 'USD',
              created_at: '2025-01-01T00:00:00Z',
              updated_at: new Date().toISOString(),
              collection_mode: 'automatic',
              billing_cycle: { interval: 'month', frequency: 1 },
              items: [],
            },
            meta: { request_id: 'req_paddle' },
          },
        };
      }
      return { status: 404, body: { error: { type: 'request_error', code: 'not_found', detail: 'not found' } } };
    },
    (status) => ({
      error:
        status >= 500
          ? { type: 'api_error', code: 'internal_error', detail: 'An internal error occurred' }
          : { type: 'request_error', code: 'subscription_locked_pending_changes', detail: 'The subscription has pending changes' },
    }),
  );
}

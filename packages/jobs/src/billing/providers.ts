import { Environment, Paddle, ApiError as PaddleApiError, LogLevel as PaddleLogLevel } from '@paddle/paddle-node-sdk';
import Razorpay from 'razorpay';
import Stripe from 'stripe';

/** The providers svc hands usage to. It never charges, invoices, taxes or refunds: they do. */
export type BillingProviderName = 'stripe' | 'razorpay' | 'paddle';
export type BillingMode = 'sandbox' | 'live';

export const BILLING_PROVIDER_NAMES: readonly BillingProviderName[] = ['stripe', 'razorpay', 'paddle'];

/**
 * The providers' credentials (apps/api env.ts `config.billing`). Keys are secrets: never log this
 * object, never answer any part of it. `apiBase` points an SDK at another address (tests: a local
 * recording server); null is the provider's own.
 */
export type BillingSettings = {
  stripe: { secretKey: string; apiBase: string | null } | null;
  razorpay: { keyId: string; keySecret: string; apiBase: string | null } | null;
  paddle: { apiKey: string; apiBase: string | null } | null;
};

/**
 * Sandbox or live, read from a key's form; null when the form does not tell (Paddle's legacy
 * keys). Stripe: `sk_test_` / `rk_test_` (restricted) vs `sk_live_` / `rk_live_`. Razorpay: the
 * key id, `rzp_test_` vs `rzp_live_`. Paddle: `pdl_sdbx_apikey_` (sandbox; `pdl_test_` is read the
 * same way) vs `pdl_live_apikey_`.
 */
export function keyModeOf(provider: BillingProviderName, key: string): BillingMode | null {
  const forms: Record<BillingProviderName, { sandbox: RegExp; live: RegExp }> = {
    stripe: { sandbox: /^(sk|rk)_test_/, live: /^(sk|rk)_live_/ },
    razorpay: { sandbox: /^rzp_test_/, live: /^rzp_live_/ },
    paddle: { sandbox: /^pdl_(sdbx|test)_/, live: /^pdl_live_/ },
  };
  if (forms[provider].sandbox.test(key)) {
    return 'sandbox';
  }
  return forms[provider].live.test(key) ? 'live' : null;
}

export type BillingAdapterStatus = { provider: BillingProviderName; configured: boolean; mode: BillingMode | null };

/** What the environment says about each provider: configured or not, and the key's mode. Never a key. */
export function billingAdapterStatuses(settings: BillingSettings): BillingAdapterStatus[] {
  return BILLING_PROVIDER_NAMES.map((provider) => {
    const key = keyOf(settings, provider);
    return { provider, configured: key !== null, mode: key === null ? null : keyModeOf(provider, key) };
  });
}

/** The key whose form tells the mode (Razorpay: the key id), or null when not configured. */
function keyOf(settings: BillingSettings, provider: BillingProviderName): string | null {
  switch (provider) {
    case 'stripe':
      return settings.stripe?.secretKey ?? null;
    case 'razorpay':
      return settings.razorpay?.keyId ?? null;
    case 'paddle':
      return settings.paddle?.apiKey ?? null;
  }
}

/** Every configured secret, to mask should a provider's error text ever echo one. */
export function billingSecretsOf(settings: BillingSettings): string[] {
  return [settings.stripe?.secretKey, settings.razorpay?.keySecret, settings.razorpay?.keyId, settings.paddle?.apiKey].filter(
    (s): s is string => typeof s === 'string' && s.length >= 4,
  );
}

/** One usage event through one mapping, as a provider receives it. */
export type UsageRecord = {
  /** `svc-<usage event id>-<mapping id>`: the same on every attempt. */
  idempotencyKey: string;
  usageEventId: string;
  mappingId: string;
  eventType: string;
  quantity: number;
  occurredAt: Date;
  /** Stripe: the meter's event name; Razorpay: an item id; Paddle: a price id. */
  providerItemId: string;
  /** Stripe: the customer id; Razorpay and Paddle: the subscription id. */
  externalAccountId: string;
};

/**
 * What became of one provider call:
 * - recorded: the provider holds the usage (its id of the record);
 * - rejected: it refused the request (4xx): sending it again would fail the same way;
 * - transient: it answered that it could not take it now (429, 5xx): the request did nothing;
 * - uncertain: no answer (timeout, connection lost): the provider may or may not hold it.
 * `reason` is svc's wording with the provider's short message; never a key.
 */
export type SendOutcome =
  | { kind: 'recorded'; providerRecordId: string }
  | { kind: 'rejected'; reason: string }
  | { kind: 'transient'; reason: string }
  | { kind: 'uncertain'; reason: string };

export type BillingAdapter = {
  provider: BillingProviderName;
  /** The key's mode (null: unknown form). */
  mode: BillingMode | null;
  /**
   * The provider deduplicates a repeated request itself (Stripe: the Idempotency-Key header and
   * the meter event identifier), so an uncertain attempt can be sent again safely. Without it a
   * resend after an uncertain attempt could record the usage twice.
   */
  deduplicates: boolean;
  send: (record: UsageRecord) => Promise<SendOutcome>;
};

const MESSAGE_LIMIT = 200;
// biome-ignore lint/suspicious/noControlCharactersInRegex: flattening control characters is the point
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]+/g;

/** A provider's message, short, on one line. */
function short(text: unknown): string {
  const s = typeof text === 'string' ? text : '';
  return s.replace(CONTROL_CHARACTERS, ' ').trim().slice(0, MESSAGE_LIMIT);
}

/** Creates the adapter of each configured provider (absent: not configured). */
export function createBillingAdapters(
  settings: BillingSettings,
  opts: { timeoutMs: number },
): Partial<Record<BillingProviderName, BillingAdapter>> {
  const out: Partial<Record<BillingProviderName, BillingAdapter>> = {};
  if (settings.stripe) {
    out.stripe = stripeAdapter(settings.stripe, opts.timeoutMs);
  }
  if (settings.razorpay) {
    out.razorpay = razorpayAdapter(settings.razorpay, opts.timeoutMs);
  }
  if (settings.paddle) {
    out.paddle = paddleAdapter(settings.paddle, opts.timeoutMs);
  }
  return out;
}

/**
 * Stripe: a billing meter event (`POST /v1/billing/meter_events`) per usage event, value = the
 * quantity, against the customer of the connection. The Idempotency-Key header carries the
 * (event, mapping) key and `identifier` the usage event id, so Stripe itself drops a repeat.
 * The SDK's own retries are off: the sync log's schedule owns retries.
 */
function stripeAdapter(settings: NonNullable<BillingSettings['stripe']>, timeoutMs: number): BillingAdapter {
  const base = settings.apiBase ? new URL(settings.apiBase) : null;
  const stripe = new Stripe(settings.secretKey, {
    maxNetworkRetries: 0,
    timeout: timeoutMs,
    telemetry: false,
    appInfo: { name: 'svc-billing-sync' },
    ...(base
      ? {
          host: base.hostname,
          port: base.port || (base.protocol === 'https:' ? 443 : 80),
          protocol: base.protocol === 'https:' ? ('https' as const) : ('http' as const),
        }
      : {}),
  });
  return {
    provider: 'stripe',
    mode: keyModeOf('stripe', settings.secretKey),
    deduplicates: true,
    async send(record) {
      try {
        const event = await stripe.billing.meterEvents.create(
          {
            event_name: record.providerItemId,
            identifier: record.usageEventId,
            timestamp: Math.floor(record.occurredAt.getTime() / 1000),
            payload: { value: String(record.quantity), stripe_customer_id: record.externalAccountId },
          },
          { idempotencyKey: record.idempotencyKey },
        );
        return { kind: 'recorded', providerRecordId: event.identifier };
      } catch (error) {
        return stripeOutcome(error);
      }
    },
  };
}

function stripeOutcome(error: unknown): SendOutcome {
  if (!(error instanceof Stripe.errors.StripeError)) {
    return { kind: 'uncertain', reason: 'Stripe call failed without an answer' };
  }
  const status = error.statusCode;
  const said = short(error.message);
  if (status === undefined || error.type === 'StripeConnectionError') {
    return { kind: 'uncertain', reason: `Stripe did not answer (${said || 'connection error'})` };
  }
  // 409: the same idempotency key is still being processed by Stripe; a later attempt gets its answer.
  if (status === 429 || status === 409 || status >= 500) {
    return { kind: 'transient', reason: `Stripe answered ${status}${said ? `: ${said}` : ''}` };
  }
  return { kind: 'rejected', reason: `Stripe refused it (${status}${error.code ? ` ${error.code}` : ''})${said ? `: ${said}` : ''}` };
}

/** The part of the SDK's axios instance svc sets (the SDK exposes it as `instance.api`, untyped). */
type AxiosDefaults = { defaults: { baseURL?: string; timeout?: number } };

/**
 * Razorpay: an add-on on the connection's subscription (`POST /v1/subscriptions/{id}/addons`),
 * quantity = the usage quantity, for the mapped item (`GET /v1/items/{id}` gives its name,
 * amount and currency, which an add-on must carry). Razorpay adds it to the subscription's next
 * invoice and charges it then, itself. Razorpay has no metering API and its SDK sends no
 * idempotency key, so the add-on's description carries the (event, mapping) key for
 * reconciliation, and svc never resends after an uncertain attempt.
 *
 * The SDK's constructor fixes https://api.razorpay.com; its requests go through the axios
 * instance it keeps at `instance.api.rq`, whose baseURL (RAZORPAY_API_BASE) and timeout svc sets.
 */
function razorpayAdapter(settings: NonNullable<BillingSettings['razorpay']>, timeoutMs: number): BillingAdapter {
  const razorpay = new Razorpay({ key_id: settings.keyId, key_secret: settings.keySecret });
  const rq = (razorpay.api as unknown as { rq: AxiosDefaults }).rq;
  rq.defaults.timeout = timeoutMs;
  if (settings.apiBase) {
    rq.defaults.baseURL = settings.apiBase.replace(/\/+$/, '');
  }
  return {
    provider: 'razorpay',
    mode: keyModeOf('razorpay', settings.keyId),
    deduplicates: false,
    async send(record) {
      let item: { name: string; amount: number | string; currency: string };
      try {
        item = await razorpay.items.fetch(record.providerItemId);
      } catch (error) {
        // A read: whatever happened, nothing was recorded.
        const outcome = razorpayOutcome(error, 'reading the item');
        return outcome.kind === 'uncertain' ? { kind: 'transient', reason: outcome.reason } : outcome;
      }
      try {
        const addon = await razorpay.subscriptions.createAddon(record.externalAccountId, {
          item: {
            name: item.name,
            amount: item.amount,
            currency: item.currency,
            description: `svc usage ${record.idempotencyKey}`,
          },
          quantity: record.quantity,
        });
        return { kind: 'recorded', providerRecordId: addon.id };
      } catch (error) {
        return razorpayOutcome(error, 'creating the add-on');
      }
    },
  };
}

function razorpayOutcome(error: unknown, step: string): Exclude<SendOutcome, { kind: 'recorded' }> {
  // The SDK rethrows an answer as { statusCode, error: { code, description } }; without an answer
  // (timeout, connection lost) it fails on its own error handling with a TypeError.
  const e = error as { statusCode?: unknown; error?: { code?: unknown; description?: unknown } };
  const status = typeof e?.statusCode === 'number' ? e.statusCode : Number.NaN;
  if (Number.isNaN(status)) {
    return { kind: 'uncertain', reason: `Razorpay did not answer while ${step}` };
  }
  const said = short(e.error?.description);
  const code = typeof e.error?.code === 'string' ? ` ${short(e.error.code)}` : '';
  if (status === 429 || status >= 500) {
    return { kind: 'transient', reason: `Razorpay answered ${status} while ${step}${said ? `: ${said}` : ''}` };
  }
  return { kind: 'rejected', reason: `Razorpay refused ${step} (${status}${code})${said ? `: ${said}` : ''}` };
}

/**
 * Paddle: a one-time charge on the connection's subscription for the mapped price, quantity =
 * the usage quantity, always `effective_from: next_billing_period`: Paddle adds it to the
 * transaction it creates when the subscription renews, and collects it then, itself. svc never
 * sends `immediately` (that would bill the customer there and then). Paddle has no metering API,
 * and takes no idempotency key: svc never resends after an uncertain attempt. Its answer is the
 * subscription (a one-time charge has no id of its own), whose id is kept.
 *
 * The SDK's `environment` option takes a base URL in place of `sandbox` / `production`
 * (PADDLE_API_BASE); otherwise the key's mode picks the environment. The SDK's fetch has no
 * timeout of its own: svc stops waiting after `timeoutMs` (an uncertain outcome).
 */
function paddleAdapter(settings: NonNullable<BillingSettings['paddle']>, timeoutMs: number): BillingAdapter {
  const mode = keyModeOf('paddle', settings.apiKey);
  const environment = settings.apiBase
    ? // The SDK uses any value that is not one of its environment names as the base URL.
      (settings.apiBase.replace(/\/+$/, '') as unknown as Environment)
    : mode === 'sandbox'
      ? Environment.sandbox
      : Environment.production;
  // logLevel none: the SDK's logger would otherwise print to the console.
  const paddle = new Paddle(settings.apiKey, { environment, logLevel: PaddleLogLevel.none });
  return {
    provider: 'paddle',
    mode,
    deduplicates: false,
    async send(record) {
      try {
        const subscription = await withDeadline(
          paddle.subscriptions.createOneTimeCharge(record.externalAccountId, {
            effectiveFrom: 'next_billing_period',
            items: [{ priceId: record.providerItemId, quantity: record.quantity }],
          }),
          timeoutMs,
        );
        return { kind: 'recorded', providerRecordId: subscription.id };
      } catch (error) {
        return paddleOutcome(error);
      }
    },
  };
}

function paddleOutcome(error: unknown): Exclude<SendOutcome, { kind: 'recorded' }> {
  if (error instanceof PaddleApiError) {
    const said = short(error.detail);
    const code = short(error.code);
    // Paddle's error types: request_error (the request is at fault) and api_error (Paddle is).
    if (error.type === 'api_error' || code === 'too_many_requests') {
      return { kind: 'transient', reason: `Paddle answered ${code || error.type}${said ? `: ${said}` : ''}` };
    }
    return { kind: 'rejected', reason: `Paddle refused it (${code || error.type})${said ? `: ${said}` : ''}` };
  }
  if (error instanceof SyntaxError) {
    // An answer that is not Paddle's JSON (a gateway's error page): Paddle did not take it.
    return { kind: 'transient', reason: 'Paddle answered something other than JSON' };
  }
  const cause = (error as { cause?: { code?: unknown } })?.cause;
  if (cause?.code === 'ECONNREFUSED') {
    // Nothing was sent.
    return { kind: 'transient', reason: 'Paddle refused the connection' };
  }
  return { kind: 'uncertain', reason: error instanceof DeadlineError ? 'Paddle did not answer in time' : 'Paddle did not answer' };
}

class DeadlineError extends Error {
  override name = 'DeadlineError';
}

async function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

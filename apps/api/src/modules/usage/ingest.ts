import type { IncomingMessage } from 'node:http';
import { AppError } from '@svc/contracts/errors';
import { SECRET_KEY_PATTERN } from '@svc/contracts/keys';
import type {
  TIngestUsageRequest,
  TIngestUsageResponse,
  TUsageChannel,
  TUsageEvent,
  TUsageEventInput,
  TUsageEventResult,
} from '@svc/contracts/usage';
import type { Db } from '@svc/db/client';
import type { UsageEventRecord } from '@svc/db/queries/usage';
import type { AppServices } from '../../context.ts';
import type { AccessRule, ApplicationCaller } from '../access/access-rule.ts';
import type { Access } from '../access/authorize.ts';
import { apiKeyPrincipal, type Principal } from '../access/principal.ts';
import { parseBearer, sha256Hex } from '../applications/keys.ts';
import { NO_SESSION_MESSAGE, sessionOf } from '../auth/current-session.ts';
import { type UsageActor, UsageIngester } from './ingester.ts';
import { prepareEvent } from './prepare-event.ts';

/**
 * Who may record usage (docs/api.md "Usage"): an application's secret key (its
 * organization), a tenant API key with usage.write (its organization), or a signed-in user with
 * usage.write in the organization named by organization_slug (default: the active workspace).
 */
export type UsageWriter = ApplicationCaller | Principal;

/**
 * The ingestion routes' access (docs/api.md "Usage"): usage.write in the organization named by
 * organization_slug (else the caller's own) for a tenant API key or a signed-in person; an
 * application's secret key by its own rule (usageTargetOf).
 */
export const USAGE_WRITE_ACCESS = {
  permission: 'usage.write',
  organization: 'slug',
  ownRuleFor: 'application',
} as const satisfies AccessRule;

/** The organization a write lands in, once the writer is authorized there. */
export type UsageTarget = { organization: { id: string; slug: string; name: string }; actor: UsageActor };

/**
 * The writer behind a request: a bearer secret is an application's secret key or else a tenant
 * API key (a bad one is refused, never ignored in favour of a cookie); without one, the session
 * cookie. Anonymous: 401.
 */
export async function usageWriterOf(services: AppServices, req: IncomingMessage): Promise<UsageWriter> {
  const authorization = req.headers.authorization;
  if (authorization !== undefined) {
    const token = parseBearer(authorization);
    if (!token || !SECRET_KEY_PATTERN.test(token)) {
      throw new AppError('invalid_secret_key', 'send a secret key or API key as Authorization: Bearer sk_live_...');
    }
    const hash = sha256Hex(token);
    const peeked = services.applications.peekBySecretKeyHash(hash);
    const found = peeked === undefined ? await services.applications.bySecretKeyHash(hash) : peeked;
    if (found) {
      if (found.application.status === 'disabled') {
        throw new AppError('application_disabled', 'this application is disabled');
      }
      return { kind: 'application', found };
    }
    return apiKeyPrincipal(services, token, new Date(), req);
  }
  const current = await sessionOf(services, req);
  if (!current) {
    throw new AppError('unauthenticated', NO_SESSION_MESSAGE);
  }
  return { kind: 'user', ...current };
}

/**
 * Where the writer may record usage. An application writes to its own organization (naming
 * another answers 404, as for any organization the caller cannot see); an API key or a user,
 * where the route's access (USAGE_WRITE_ACCESS) resolved usage.write for them.
 */
export function usageTargetOf(writer: Access | ApplicationCaller, untrustedSlug: string | undefined): UsageTarget {
  if ('found' in writer) {
    const { application, organization } = writer.found;
    if (application.isKeyless || (untrustedSlug !== undefined && untrustedSlug !== organization.slug)) {
      throw new AppError('not_found', 'organization not found');
    }
    return { organization, actor: { type: 'application', id: application.id } };
  }
  const { organization, principal } = writer;
  if (principal.kind === 'setup_link') {
    // authorize never resolves access for a setup link's page (it calls no route).
    throw new AppError('not_found', 'organization not found');
  }
  return {
    organization,
    actor: principal.kind === 'api_key' ? { type: 'api_key', id: principal.apiKey.id } : { type: 'user', id: principal.user.id },
  };
}

/** The API view of a recorded event (never its request hash). */
export function toUsageEvent(row: UsageEventRecord): TUsageEvent {
  return {
    id: row.id,
    idempotencyKey: row.idempotencyKey,
    eventType: row.eventType,
    quantity: row.quantity,
    occurredAt: new Date(row.occurredAt).toISOString(),
    properties: row.properties,
    channel: row.channel,
    sourceId: row.sourceId,
    createdAt: new Date(row.createdAt).toISOString(),
  };
}

const ingesters = new WeakMap<Db, UsageIngester>();

/** The process's group-commit writer for this database (one per pool). */
export function ingesterFor(db: Db): UsageIngester {
  let ingester = ingesters.get(db);
  if (!ingester) {
    ingester = new UsageIngester(db);
    ingesters.set(db, ingester);
  }
  return ingester;
}

/**
 * POST /v1/usage/events (`usage`) and POST /v1/usage-events (`metering`), after the writer is
 * known, the body validated and the route's access resolved. One event answers itself (`{ event, duplicate }`), a batch
 * `{ results }` in request order (the router's `created` meta: 201 for one new event, else 200). Metering events are checked against the plan's monthly usage
 * limits (`assertWithinUsageLimit` in ingester.ts, under a per-counter advisory lock): an event
 * that would pass its type's limit is refused with 402 subscription_limit_exceeded and nothing of
 * the request is recorded.
 *
 * The subscriptions module's rule (402 subscription_inactive or subscription_limit_exceeded,
 * `assertSubscriptionAllows`) is applied by the ingester inside the writing transaction, once per
 * organization per batch rather than once per request.
 */
export async function ingestUsage(
  services: AppServices,
  writer: Access | ApplicationCaller,
  input: TIngestUsageRequest,
  channel: TUsageChannel,
): Promise<TIngestUsageResponse> {
  const { organization, actor } = usageTargetOf(writer, input.organization_slug);
  // The subscription rule (402 while inactive, cancelled, expired or over a limit) is applied by
  // the ingester, once per organization per transaction, before anything is written.
  const receivedAt = Date.now();
  const single = input.events === undefined;
  const events = single ? [input as TUsageEventInput] : (input.events as TUsageEventInput[]);
  const outcome = await ingesterFor(services.db).submit({
    tenantId: organization.id,
    channel,
    actor,
    events: events.map((e) => prepareEvent(e, receivedAt)),
  });
  const results: TUsageEventResult[] = outcome.map((r) => ({ event: toUsageEvent(r.event), duplicate: r.duplicate }));
  return single ? (results[0] as TUsageEventResult) : { results };
}

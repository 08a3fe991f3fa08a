import type { IncomingMessage } from 'node:http';
import { type EventType, isEventType } from '@svc/contracts/events';
import { newId } from '@svc/contracts/ids';
import type { DbOrTx } from '@svc/db/client';
import { insertAuditLog } from '@svc/db/queries/audit-logs';
import { type RecordedEvent, recordEvent, recordEvents } from '@svc/db/queries/webhook-events';
import type { Principal } from './principal.ts';

/** Where a mutation came from, for its audit entry. */
export type RequestMeta = { ipAddress: string | null; userAgent: string | null; requestId: string };

export type AuditEntry = {
  /** The organization acted on (null for platform-level actions). */
  tenantId: string | null;
  /** `resource.verb`, the event catalog's names where one exists (docs/api.md). */
  action: string;
  target: { type: string; id: string | null };
  /** What changed, in safe terms; redacted again on the way in. */
  summary?: Record<string, unknown>;
  /**
   * The organization whose webhook endpoints hear of it, when that is not `tenantId`: an
   * organization's deletion is a platform-level entry (the organization is gone) announced to the
   * organization's own endpoints.
   */
  eventTenantId?: string;
};

const SECRET_NAME = /secret|token|password|hash|cookie|cipher|authorization|credential/i;
/** Secret keys are base62; webhook secrets are base64 (`+`, `/`, `=`) or base64url. */
const SECRET_VALUE = /\b(sk_live_|whsec_)[0-9A-Za-z+/=_-]+/g;

/**
 * Defence in depth for audit summaries (docs/architecture.md section 7): fields named like secrets are
 * replaced, secret-shaped values are masked wherever they appear, strings are capped.
 */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 4) {
    return '[truncated]';
  }
  if (typeof value === 'string') {
    return value.replace(SECRET_VALUE, '$1[redacted]').slice(0, 500);
  }
  if (Array.isArray(value)) {
    return value.slice(0, 50).map((v) => redact(v, depth + 1));
  }
  if (value && typeof value === 'object') {
    if (value instanceof Date) {
      return value.toISOString();
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value).slice(0, 50)) {
      out[k] = SECRET_NAME.test(k) ? '[redacted]' : redact(v, depth + 1);
    }
    return out;
  }
  return value;
}

function actorOf(principal: Principal | null): {
  actorType: 'user' | 'api_key' | 'system' | 'setup_link';
  actorId: string | null;
  actorLabel: string | null;
} {
  if (!principal) {
    return { actorType: 'system', actorId: null, actorLabel: null };
  }
  // An agent on svc's MCP server (modules/mcp/agent.ts) acts for the person who allowed it:
  // the entry names the person and, beside them, the agent's client id.
  const agent = (principal as { agent?: { clientId: string; userId: string } }).agent;
  if (principal.kind === 'api_key' && agent) {
    return { actorType: 'user', actorId: agent.userId, actorLabel: principal.apiKey.name };
  }
  if (principal.kind === 'setup_link') {
    // What an IT admin did on a setup link's page is the link's act (docs/enterprise.md "Setup links").
    return { actorType: 'setup_link', actorId: principal.setupLink.id, actorLabel: principal.setupLink.label };
  }
  return principal.kind === 'user'
    ? { actorType: 'user', actorId: principal.user.id, actorLabel: principal.user.email }
    : { actorType: 'api_key', actorId: principal.apiKey.id, actorLabel: principal.apiKey.name };
}

/**
 * Appends the audit entry of a mutation; call it inside the mutation's transaction. When the
 * action is in the webhook event catalog (docs/api.md) and names an organization, the same
 * transaction also records the event and queues a delivery per subscribed endpoint, so every
 * audited mutation with an event type emits exactly one event, committed or rolled back with it.
 * Returns that event, if one was recorded.
 */
export async function recordAudit(
  tx: DbOrTx,
  principal: Principal | null,
  request: RequestMeta,
  entry: AuditEntry,
): Promise<RecordedEvent | undefined> {
  const summary = redact(entry.summary ?? {}) as Record<string, unknown>;
  await insertAuditLog(tx, {
    id: newId('auditLog'),
    tenantId: entry.tenantId,
    ...actorOf(principal),
    action: entry.action,
    targetType: entry.target.type,
    targetId: entry.target.id,
    ipAddress: request.ipAddress?.slice(0, 64) ?? null,
    userAgent: request.userAgent?.slice(0, 512) ?? null,
    requestId: request.requestId.slice(0, 128),
    summary,
  });
  const eventTenantId = entry.eventTenantId ?? entry.tenantId;
  if (eventTenantId && isEventType(entry.action)) {
    return recordEvent(tx, {
      tenantId: eventTenantId,
      type: entry.action,
      data: eventData({ ...entry, tenantId: eventTenantId }, summary, principal),
    });
  }
  return undefined;
}

/**
 * The webhook events of one platform-level change that concerns many organizations (a plan's
 * features change for every organization on the plan): one event per organization, with the
 * payload recordAudit would give it, all recorded in one statement (recordEvents), in the
 * caller's transaction. The change's own audit entry is the platform-level one the caller writes.
 */
export async function recordOrganizationEvents(
  tx: DbOrTx,
  principal: Principal | null,
  type: EventType,
  entries: readonly { tenantId: string; target: AuditEntry['target']; summary: Record<string, unknown> }[],
): Promise<RecordedEvent[]> {
  return recordEvents(
    tx,
    entries.map((entry) => ({
      tenantId: entry.tenantId,
      type,
      data: eventData({ ...entry, action: type }, redact(entry.summary) as Record<string, unknown>, principal),
    })),
  );
}

/**
 * The `data` of a webhook payload: what was acted on, by whom, and the redacted summary. No
 * request facts (IP address, user agent) leave svc in a webhook.
 */
function eventData(entry: AuditEntry, summary: Record<string, unknown>, principal: Principal | null): Record<string, unknown> {
  const actor = actorOf(principal);
  return {
    ...summary,
    object: entry.target.type,
    id: entry.target.id,
    organizationId: entry.tenantId,
    actor: { type: actor.actorType, id: actor.actorId },
  };
}

/** The request facts an audit entry keeps. */
export function requestMetaOf(req: IncomingMessage, clientIp: (req: IncomingMessage) => string, requestId: string): RequestMeta {
  const ua = req.headers['user-agent'];
  return { ipAddress: clientIp(req), userAgent: typeof ua === 'string' ? ua : null, requestId };
}

/**
 * The webhook event catalog (API.md). Names never change; the catalog may grow. An audit entry
 * whose action is one of these names also records an event and enqueues its deliveries, in the
 * same transaction (apps/api/src/modules/access/audit.ts).
 */
export const EVENT_TYPES = [
  'usage_event.created',
  'invitation.created',
  'invitation.accepted',
  'invitation.revoked',
  'member.added',
  'member.removed',
  'user.created',
  'user.updated',
  'session.revoked',
  'role.created',
  'role.updated',
  'api_key.created',
  'api_key.rotated',
  'api_key.revoked',
  'application.created',
  'application.updated',
  'tenant.created',
  'tenant.updated',
  'tenant.deleted',
  'subscription.updated',
  'export.completed',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

const EVENT_TYPE_SET: ReadonlySet<string> = new Set(EVENT_TYPES);

export function isEventType(value: string): value is EventType {
  return EVENT_TYPE_SET.has(value);
}

/** Sent by POST /v1/webhook-endpoints/{id}/test; never recorded as a tenant event. */
export const TEST_EVENT_TYPE = 'webhook.test' as const;

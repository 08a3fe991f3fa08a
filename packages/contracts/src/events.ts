import type { Permission } from './permissions.ts';

/**
 * The webhook event catalog (docs/api.md). Names never change; the catalog may grow. An audit entry
 * whose action is one of these names also records an event and enqueues its deliveries, in the
 * same transaction (apps/api/src/modules/access/audit.ts).
 */
export const EVENT_TYPES = [
  'usage_event.created',
  'usage.threshold_reached',
  'usage.summary',
  'invitation.created',
  'invitation.accepted',
  'invitation.revoked',
  'member.added',
  'member.removed',
  'user.created',
  'user.updated',
  'session.revoked',
  'session.created',
  'session.ended',
  'role.created',
  'role.updated',
  'role.deleted',
  'api_resource.created',
  'api_resource.updated',
  'api_resource.deleted',
  'product_role.created',
  'product_role.updated',
  'product_role.deleted',
  'api_key.created',
  'api_key.rotated',
  'api_key.revoked',
  'application.created',
  'application.updated',
  'application.secret_rotated',
  'tenant.created',
  'tenant.updated',
  'tenant.deleted',
  'subscription.updated',
  'export.completed',
  'domain.created',
  'domain.updated',
  'domain.verified',
  'domain.unverified',
  'domain.deleted',
  'third_party_access.updated',
  'connected_app.revoked',
  'directory.created',
  'directory.updated',
  'directory.token_rotated',
  'directory.deleted',
  'directory_group.created',
  'directory_group.updated',
  'directory_group.deleted',
  'sso.connection_created',
  'sso.connection_updated',
  'sso.connection_deleted',
  'sso.signed_in',
  'setup_link.created',
  'setup_link.opened',
  'setup_link.revoked',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/**
 * What a caller must be able to read to subscribe an endpoint to each event type: the read
 * permission of what the event is about (an export has no read permission of its own: who may
 * create exports). Typed over the catalog, so a new event type without its permission does not
 * compile.
 */
export const EVENT_READ_PERMISSIONS: Record<EventType, Permission> = {
  'usage_event.created': 'usage.read',
  'usage.threshold_reached': 'usage.read',
  'usage.summary': 'usage.read',
  'invitation.created': 'invitations.read',
  'invitation.accepted': 'invitations.read',
  'invitation.revoked': 'invitations.read',
  'member.added': 'members.read',
  'member.removed': 'members.read',
  'user.created': 'users.read',
  'user.updated': 'users.read',
  'session.revoked': 'sessions.read',
  'session.created': 'sessions.read',
  'session.ended': 'sessions.read',
  'role.created': 'roles.read',
  'role.updated': 'roles.read',
  'role.deleted': 'roles.read',
  // The product's catalog and product roles: platform-level, announced to the platform
  // workspace's endpoints (modules/authorization); reading them is roles.read there.
  'api_resource.created': 'roles.read',
  'api_resource.updated': 'roles.read',
  'api_resource.deleted': 'roles.read',
  'product_role.created': 'roles.read',
  'product_role.updated': 'roles.read',
  'product_role.deleted': 'roles.read',
  'api_key.created': 'api_keys.read',
  'api_key.rotated': 'api_keys.read',
  'api_key.revoked': 'api_keys.read',
  'application.created': 'applications.read',
  'application.updated': 'applications.read',
  // A new secret key: a machine client's or confidential application's old one stops working.
  'application.secret_rotated': 'applications.read',
  'tenant.created': 'tenant.read',
  'tenant.updated': 'tenant.read',
  'tenant.deleted': 'tenant.read',
  'subscription.updated': 'subscription.read',
  'export.completed': 'exports.create',
  'domain.created': 'domains.read',
  'third_party_access.updated': 'connected_apps.read',
  'connected_app.revoked': 'connected_apps.read',
  'domain.updated': 'domains.read',
  'domain.verified': 'domains.read',
  'domain.unverified': 'domains.read',
  'domain.deleted': 'domains.read',
  'directory.created': 'directories.read',
  'directory.updated': 'directories.read',
  'directory.token_rotated': 'directories.read',
  'directory.deleted': 'directories.read',
  'directory_group.created': 'directories.read',
  'directory_group.updated': 'directories.read',
  'directory_group.deleted': 'directories.read',
  'sso.connection_created': 'sso.read',
  'sso.connection_updated': 'sso.read',
  'sso.connection_deleted': 'sso.read',
  'sso.signed_in': 'sso.read',
  'setup_link.created': 'sso.read',
  'setup_link.opened': 'sso.read',
  'setup_link.revoked': 'sso.read',
};

const EVENT_TYPE_SET: ReadonlySet<string> = new Set(EVENT_TYPES);

export function isEventType(value: string): value is EventType {
  return EVENT_TYPE_SET.has(value);
}

/** Sent by POST /v1/webhook-endpoints/{id}/test; never recorded as a tenant event. */
export const TEST_EVENT_TYPE = 'webhook.test' as const;

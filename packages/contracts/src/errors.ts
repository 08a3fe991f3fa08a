/**
 * The one table of error codes. Every non-2xx JSON answer from /v1 and /trpc carries
 * `{ error: { code, message, requestId } }` with a code from this table; the HTTP status and the
 * tRPC code are derived from it here and nowhere else.
 */
export const ERROR_CODES = {
  validation_failed: { status: 400, trpc: 'BAD_REQUEST' },
  invalid_publishable_key: { status: 400, trpc: 'BAD_REQUEST' },
  unsupported_framework: { status: 400, trpc: 'BAD_REQUEST' },
  /** GET /v1/setup/agent-context: `format` is neither json nor markdown. */
  unsupported_format: { status: 400, trpc: 'BAD_REQUEST' },
  malformed_request: { status: 400, trpc: 'BAD_REQUEST' },
  unauthenticated: { status: 401, trpc: 'UNAUTHORIZED' },
  invalid_secret_key: { status: 401, trpc: 'UNAUTHORIZED' },
  subscription_inactive: { status: 402, trpc: 'PAYMENT_REQUIRED' },
  subscription_limit_exceeded: { status: 402, trpc: 'PAYMENT_REQUIRED' },
  forbidden: { status: 403, trpc: 'FORBIDDEN' },
  user_suspended: { status: 403, trpc: 'FORBIDDEN' },
  csrf_rejected: { status: 403, trpc: 'FORBIDDEN' },
  keyless_disabled: { status: 403, trpc: 'FORBIDDEN' },
  not_found: { status: 404, trpc: 'NOT_FOUND' },
  application_not_found: { status: 404, trpc: 'NOT_FOUND' },
  method_not_allowed: { status: 405, trpc: 'METHOD_NOT_SUPPORTED' },
  application_disabled: { status: 409, trpc: 'CONFLICT' },
  /** Claiming a keyless development application that is no longer keyless (it was claimed). */
  application_already_claimed: { status: 409, trpc: 'CONFLICT' },
  conflict: { status: 409, trpc: 'CONFLICT' },
  payload_too_large: { status: 413, trpc: 'PAYLOAD_TOO_LARGE' },
  unsupported_media_type: { status: 415, trpc: 'UNSUPPORTED_MEDIA_TYPE' },
  rate_limited: { status: 429, trpc: 'TOO_MANY_REQUESTS' },
  /** Roles: a custom role's key is taken in the organization, or is a system role's or a product role's key. */
  role_key_taken: { status: 409, trpc: 'CONFLICT' },
  /** Roles: org_admin and org_member are built in, and product roles are the platform's: an organization cannot change them. */
  system_role_immutable: { status: 409, trpc: 'CONFLICT' },
  /** Roles: a custom role still held by a membership (any status) or a pending invitation cannot be deleted. */
  role_in_use: { status: 409, trpc: 'CONFLICT' },
  /** A role key that is neither a system role, a product role nor a custom role of the organization. */
  unknown_role: { status: 400, trpc: 'BAD_REQUEST' },
  /** Invitations: no invitation has this token (or id, within the organization). */
  invitation_not_found: { status: 404, trpc: 'NOT_FOUND' },
  invitation_expired: { status: 409, trpc: 'CONFLICT' },
  invitation_revoked: { status: 409, trpc: 'CONFLICT' },
  invitation_already_accepted: { status: 409, trpc: 'CONFLICT' },
  /** The organization already has a pending invitation for this email (revoke it first). */
  invitation_already_pending: { status: 409, trpc: 'CONFLICT' },
  /** The invitation is for another email, or the signed-in user's email is not verified. */
  invitation_email_mismatch: { status: 403, trpc: 'FORBIDDEN' },
  /** The user accepting an invitation is already a member of its organization. */
  already_member: { status: 409, trpc: 'CONFLICT' },
  /** Users: the change would leave the organization without an active org_admin. */
  last_org_admin: { status: 409, trpc: 'CONFLICT' },
  /** Users: a person's own name and account status are theirs (and the engine's): only a platform admin changes them. */
  user_profile_forbidden: { status: 403, trpc: 'FORBIDDEN' },
  /** Users: the member is a platform admin; nobody in a tenant may suspend, demote or remove them. */
  platform_admin_protected: { status: 403, trpc: 'FORBIDDEN' },
  /** Users: the platform workspace's members follow the engine's platform admin group; change the group instead. */
  platform_workspace_managed: { status: 409, trpc: 'CONFLICT' },
  /** Users: the membership is still invited: only the person accepts it (remove it to withdraw the invitation). */
  membership_pending: { status: 409, trpc: 'CONFLICT' },
  header_too_large: { status: 431, trpc: 'BAD_REQUEST' },
  /** Applications: the logo URL is not https, not a valid absolute URL, carries credentials or is longer than 2,048 characters. */
  logo_url_invalid: { status: 400, trpc: 'BAD_REQUEST' },
  /** Applications: the back-channel logout URL's host is a private, loopback, link-local, reserved or cloud metadata address or name (the webhook address rules). */
  backchannel_logout_url_not_allowed: { status: 400, trpc: 'BAD_REQUEST' },
  /** Webhooks: the URL is not http(s), has credentials, or is not a valid absolute URL. */
  webhook_url_invalid: { status: 400, trpc: 'BAD_REQUEST' },
  /** Webhooks: the URL's host is or resolves to a private, loopback, link-local or metadata address. */
  webhook_url_not_allowed: { status: 400, trpc: 'BAD_REQUEST' },
  /** Webhooks: an event type that is not in the catalog (GET /v1/webhook-event-types). */
  unknown_event_type: { status: 400, trpc: 'BAD_REQUEST' },
  /** Webhooks: the endpoint is disabled (enable it first), e.g. for a test event. */
  webhook_endpoint_disabled: { status: 409, trpc: 'CONFLICT' },
  /** Webhook deliveries: only a failed or retrying delivery can be retried. */
  webhook_delivery_not_retryable: { status: 409, trpc: 'CONFLICT' },
  /** Webhook replays: more events than one replay may re-send, or a time range longer than it may cover. */
  webhook_replay_too_large: { status: 400, trpc: 'BAD_REQUEST' },
  /** Webhook replays: an event type the endpoint is not subscribed to (a replay sends nothing an endpoint did not ask for). */
  webhook_event_type_not_subscribed: { status: 400, trpc: 'BAD_REQUEST' },
  /** Email: EMAIL_ENABLED is false or no EMAIL_PROVIDER is configured, so nothing can be sent. */
  email_delivery_disabled: { status: 409, trpc: 'CONFLICT' },
  /** Usage: the idempotency key names an event already recorded with another payload (Stripe's semantics; the whole request is refused). */
  idempotency_key_reused: { status: 409, trpc: 'CONFLICT' },
  /** Billing: the organization already has a record for this provider (POST /v1/billing/connect/{provider} updates it). */
  billing_provider_exists: { status: 409, trpc: 'CONFLICT' },
  /** Billing: the requested mode differs from the mode of the configured provider key (a live connection on a test key, say). */
  billing_mode_mismatch: { status: 409, trpc: 'CONFLICT' },
  /** Billing sync logs: only a failed or skipped log can be retried. */
  billing_sync_log_not_retryable: { status: 409, trpc: 'CONFLICT' },
  /** Subscription plans: another plan has this key. */
  plan_key_taken: { status: 409, trpc: 'CONFLICT' },
  /** Subscription plans: the default plan stays the default until another plan is made the default. */
  default_plan_required: { status: 409, trpc: 'CONFLICT' },
  /** Subscription plans: no plan has this id or key. */
  plan_not_found: { status: 404, trpc: 'NOT_FOUND' },
  /** Exports: the snapshot is still pending or running; poll GET /v1/exports/{id} until completed. */
  export_not_ready: { status: 409, trpc: 'CONFLICT' },
  /** Exports: the snapshot failed to build (its `error` says why); create a new export. */
  export_failed: { status: 409, trpc: 'CONFLICT' },
  /** Events feed: the cursor was not issued by svc, was altered, or belongs to another organization or other filters. */
  invalid_cursor: { status: 400, trpc: 'BAD_REQUEST' },
  /** Events feed: the cursor points before the retention window (EVENTS_RETENTION_DAYS); start again without it. */
  cursor_expired: { status: 410, trpc: 'BAD_REQUEST' },
  /** Authorization: a product permission name that svc reserves (a control-plane permission, an OpenID scope, or the `svc` prefix). */
  permission_name_reserved: { status: 400, trpc: 'BAD_REQUEST' },
  /** Authorization: another API resource already has a permission of this name (names are unique across the product). */
  permission_name_taken: { status: 409, trpc: 'CONFLICT' },
  /** Authorization: another API resource has this identifier. */
  resource_identifier_taken: { status: 409, trpc: 'CONFLICT' },
  /** Authorization: a product permission that no API resource declares. */
  unknown_permission: { status: 400, trpc: 'BAD_REQUEST' },
  /** Authorization: a product role's key is taken (by another product role or an organization's custom role). */
  product_role_key_taken: { status: 409, trpc: 'CONFLICT' },
  /** Authorization: the built-in roles' product rows keep their key and name and cannot be deleted. */
  builtin_role_immutable: { status: 409, trpc: 'CONFLICT' },
  /** Applications: a setting that does not fit the client type (machine clients: no redirect URLs; others: no machine permissions or keys). */
  client_type_mismatch: { status: 400, trpc: 'BAD_REQUEST' },
  /** Applications: a machine client's JWK Set is not one svc can verify private_key_jwt with (public asymmetric keys only). */
  jwks_invalid: { status: 400, trpc: 'BAD_REQUEST' },
  /** Domains: not a domain name (an IP address, one label, a bad label, spaces, a URL, longer than 253 characters). */
  domain_invalid: { status: 400, trpc: 'BAD_REQUEST' },
  /** Domains: a public suffix (co.uk, github.io, ...), which no organization can own. */
  domain_public_suffix: { status: 400, trpc: 'BAD_REQUEST' },
  /** Domains: the organization already has this domain (in any spelling: case, trailing dot, Unicode or punycode). */
  domain_already_added: { status: 409, trpc: 'CONFLICT' },
  /** Domains: another organization has verified this domain; a domain is verified by at most one organization. */
  domain_verified_elsewhere: { status: 409, trpc: 'CONFLICT' },
  /** SSO connections: the IdP metadata is not SAML metadata svc can use (malformed XML, a DOCTYPE, no IdP descriptor, no signing certificate, no HTTP-Redirect sign-in URL). */
  sso_metadata_invalid: { status: 400, trpc: 'BAD_REQUEST' },
  /** SSO connections: the IdP metadata or OIDC discovery URL could not be read (refused address, not 200, too large, too slow). */
  sso_metadata_unreachable: { status: 400, trpc: 'BAD_REQUEST' },
  /** SSO connections: a SAML connection needs the IdP's entity id, sign-in URL and a certificate (by metadata or by hand); an OIDC one a client secret. */
  sso_connection_incomplete: { status: 400, trpc: 'BAD_REQUEST' },
  /** Setup links: the link was opened already, in another browser; ask the organization's admin for a new one. */
  setup_link_used: { status: 409, trpc: 'CONFLICT' },
  /** Setup links: the link has expired; ask the organization's admin for a new one. */
  setup_link_expired: { status: 410, trpc: 'BAD_REQUEST' },
  /** Setup links: the organization's admin revoked the link. */
  setup_link_revoked: { status: 410, trpc: 'BAD_REQUEST' },
  /** Setup links: the link was revoked already. */
  setup_link_already_revoked: { status: 409, trpc: 'CONFLICT' },

  internal: { status: 500, trpc: 'INTERNAL_SERVER_ERROR' },
  /** The identity engine could not be reached (connection refused, DNS, TLS). */
  engine_unreachable: { status: 502, trpc: 'BAD_GATEWAY' },
  /** The identity engine answered something svc cannot relay (not JSON, too large, a redirect, our token refused). */
  engine_bad_response: { status: 502, trpc: 'BAD_GATEWAY' },
  service_unavailable: { status: 503, trpc: 'SERVICE_UNAVAILABLE' },
  /** The identity engine did not answer in time. */
  engine_timeout: { status: 504, trpc: 'GATEWAY_TIMEOUT' },
} as const satisfies Record<string, { status: number; trpc: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function statusOf(code: ErrorCode): number {
  return ERROR_CODES[code].status;
}

/**
 * The one error type services throw. `message` is shown to callers; never put a secret in it.
 * `details` are machine-readable fields the error body carries beside code and message (a 402's
 * limit, max, used, ...: ZSubscriptionBlock in subscriptions.ts). `organizationId` names the
 * organization whose subscription refused: the body's upgradeUrl is made for it
 * (SUBSCRIPTION_UPGRADE_URL); it is not sent itself.
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: Readonly<Record<string, unknown>> | undefined;
  readonly organizationId: string | undefined;

  constructor(code: ErrorCode, message: string, opts: { details?: Readonly<Record<string, unknown>>; organizationId?: string } = {}) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.details = opts.details;
    this.organizationId = opts.organizationId;
  }

  get status(): number {
    return statusOf(this.code);
  }
}

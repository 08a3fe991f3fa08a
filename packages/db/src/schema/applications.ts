import { sql } from 'drizzle-orm';
import { boolean, check, index, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.ts';

/** Per-application social sign-in settings. */
export type ApplicationOauthSettings = {
  /** Provider id used in production with the customer's own credentials (e.g. `google`). */
  productionProvider?: string;
};

/** An application (project) of a tenant: what publishable and secret keys identify. */
export const applications = pgTable(
  'applications',
  {
    /** `app_` prefixed id. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    /** Unique within the tenant. */
    slug: text('slug').notNull(),
    name: text('name').notNull(),
    /**
     * https URL of the application's logo, shown on the hosted sign-in of its authorization
     * requests; null: none. Checked by checkLogoUrl (contracts) before it is stored; the check
     * constraint keeps anything but https out even so, since the page puts it in an <img>.
     */
    logoUrl: text('logo_url'),
    status: text('status', { enum: ['active', 'disabled'] })
      .notNull()
      .default('active'),
    /** `pk_live_...`: public, identifies the application to browsers. */
    publishableKey: text('publishable_key').notNull().unique(),
    /** Hex SHA-256 of the current `sk_live_...` secret; the secret itself is never stored. */
    secretKeyHash: text('secret_key_hash').notNull().unique(),
    /** Leading characters of the secret (`sk_live_` + 4), shown to tell keys apart. */
    secretKeyPrefix: text('secret_key_prefix').notNull(),
    /** Exact URLs (or same-origin paths) a hosted sign-in may return to. */
    redirectUrls: text('redirect_urls').array().notNull().default(sql`'{}'::text[]`),
    /** Browser origins allowed to call the public API for this application. */
    allowedOrigins: text('allowed_origins').array().notNull().default(sql`'{}'::text[]`),
    /** Exact URLs an OpenID Connect logout (end_session) may return to: its post_logout_redirect_uris. */
    postLogoutRedirectUrls: text('post_logout_redirect_urls').array().notNull().default(sql`'{}'::text[]`),
    /** Where OIDC Back-Channel Logout tokens are POSTed when a session ends; null: none. */
    backchannelLogoutUrl: text('backchannel_logout_url'),
    /**
     * `confidential`: authenticates at the token endpoint with the secret key (client_secret_basic
     * or client_secret_post); `public`: PKCE alone (SPAs, native apps); `machine`: no person signs
     * in, it gets tokens for itself by the client credentials grant, acting for its organization
     * with `machinePermissions` (docs/authorization.md).
     */
    clientType: text('client_type', { enum: ['confidential', 'public', 'machine'] })
      .notNull()
      .default('confidential'),
    /**
     * How a machine client authenticates at the token endpoint: its secret key
     * (`client_secret_basic`, or `client_secret_post`) or a JWT signed with a key it registered
     * (`private_key_jwt`, RFC 7523, with `jwks` or `jwksUri`). Null for the other client types.
     */
    tokenEndpointAuthMethod: text('token_endpoint_auth_method', { enum: ['client_secret_basic', 'private_key_jwt'] }),
    /** The public keys of a `private_key_jwt` machine client (a JWK Set), or null. */
    jwks: jsonb('jwks').$type<{ keys: Record<string, unknown>[] }>(),
    /** Where a `private_key_jwt` machine client publishes its JWK Set (https), or null. */
    jwksUri: text('jwks_uri'),
    /**
     * Product permissions granted to a machine client (api_permissions.name, sorted): what its
     * access tokens may carry, per resource. Empty for the other client types.
     */
    machinePermissions: text('machine_permissions').array().notNull().default(sql`'{}'::text[]`),
    /** Who may sign in to it: `anyone`, or only `members` of its organization. */
    signInAudience: text('sign_in_audience', { enum: ['anyone', 'members'] })
      .notNull()
      .default('anyone'),
    oauth: jsonb('oauth').$type<ApplicationOauthSettings>().notNull().default({}),
    /** The one shared keyless-development application (at most one row has it). */
    isKeyless: boolean('is_keyless').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('applications_tenant_slug_key').on(t.tenantId, t.slug),
    index('applications_tenant_created_idx').on(t.tenantId, t.createdAt),
    uniqueIndex('applications_single_keyless_key').on(t.isKeyless).where(sql`${t.isKeyless}`),
    check('applications_client_type_check', sql`${t.clientType} in ('confidential', 'public', 'machine')`),
    check(
      'applications_token_endpoint_auth_method_check',
      sql`${t.tokenEndpointAuthMethod} is null or ${t.tokenEndpointAuthMethod} in ('client_secret_basic', 'private_key_jwt')`,
    ),
    check('applications_jwks_uri_check', sql`${t.jwksUri} is null or (${t.jwksUri} like 'https://%' and length(${t.jwksUri}) <= 2048)`),
    check('applications_sign_in_audience_check', sql`${t.signInAudience} in ('anyone', 'members')`),
    check('applications_logo_url_check', sql`${t.logoUrl} is null or (${t.logoUrl} like 'https://%' and length(${t.logoUrl}) <= 2048)`),
  ],
);

import { sql } from 'drizzle-orm';
import { boolean, index, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { users } from './identity.ts';
import { organizations } from './organizations.ts';

/** Which attribute (SAML) or claim (OIDC) carries the email, the name and the groups. */
export type SsoAttributeMapping = { email: string; name: string; groups: string };

/** An IdP group and the role of the organization its members get. */
export type SsoGroupRole = { group: string; roleKey: string };

/**
 * An organization's enterprise connection (docs/enterprise.md "SSO connections"): svc is the SAML
 * service provider or the OIDC relying party of the organization's own identity provider.
 */
export const ssoConnections = pgTable(
  'sso_connections',
  {
    /** `ssoc_` prefixed id; also the connection's path segment in its SP URLs. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    protocol: text('protocol', { enum: ['saml', 'oidc'] }).notNull(),
    /** A disabled connection starts and accepts no sign-in. */
    enabled: boolean('enabled').notNull().default(true),
    /** SAML: the IdP's entityID (the Issuer its responses must carry). */
    samlIdpEntityId: text('saml_idp_entity_id'),
    /** SAML: the IdP's HTTP-Redirect SingleSignOnService URL. */
    samlIdpSsoUrl: text('saml_idp_sso_url'),
    /** SAML: the IdP's signing certificates (PEM); a response must be signed by one of them. */
    samlIdpCertificates: text('saml_idp_certificates').array(),
    /** SAML: where the IdP metadata was fetched from, if it came by URL. */
    samlIdpMetadataUrl: text('saml_idp_metadata_url'),
    /** SAML: whether a response no AuthnRequest of svc asked for (IdP-initiated) is accepted. */
    samlAllowIdpInitiated: boolean('saml_allow_idp_initiated').notNull().default(false),
    /** OIDC: the issuer whose `/.well-known/openid-configuration` is read. */
    oidcIssuer: text('oidc_issuer'),
    oidcClientId: text('oidc_client_id'),
    /** OIDC: the client secret, sealed with the secret box (context: the connection id). */
    oidcClientSecretSealed: text('oidc_client_secret_sealed'),
    attributeMapping: jsonb('attribute_mapping').$type<SsoAttributeMapping>().notNull(),
    /** The role a person gets when no group of theirs is mapped. */
    defaultRoleKey: text('default_role_key').notNull().default('org_member'),
    /** First match wins. */
    groupRoles: jsonb('group_roles').$type<SsoGroupRole[]>().notNull().default(sql`'[]'::jsonb`),
    lastSignInAt: timestamp('last_sign_in_at', { withTimezone: true, mode: 'date', precision: 3 }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index('sso_connections_tenant_created_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc())],
);

/**
 * A sign-in svc started at a connection (an AuthnRequest, or an OIDC authorization request): its
 * id is what the answer must be InResponseTo. Kept in PostgreSQL so that any replica can finish it.
 * The browser carries only `relay_hash`'s preimage (the SAML RelayState, the OIDC state).
 */
export const ssoRequests = pgTable(
  'sso_requests',
  {
    /** The AuthnRequest's ID (`_` + random); for OIDC a random id. */
    id: text('id').primaryKey(),
    connectionId: text('connection_id')
      .notNull()
      .references(() => ssoConnections.id, { onDelete: 'cascade' }),
    /** Hex SHA-256 of the relay state handed to the IdP. */
    relayHash: text('relay_hash').notNull().unique(),
    returnTo: text('return_to').notNull(),
    applicationId: text('application_id'),
    /** A test sign-in from the console: shows what the IdP sent, makes no session or member. */
    test: boolean('test').notNull().default(false),
    /** OIDC: PKCE verifier and nonce. */
    codeVerifier: text('code_verifier'),
    nonce: text('nonce'),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true, mode: 'date', precision: 3 }),
  },
  (t) => [index('sso_requests_expires_idx').on(t.expiresAt)],
);

/** Assertion ids a connection has accepted: each is accepted once (until it expires). */
export const ssoAssertions = pgTable(
  'sso_assertions',
  {
    connectionId: text('connection_id')
      .notNull()
      .references(() => ssoConnections.id, { onDelete: 'cascade' }),
    assertionId: text('assertion_id').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.connectionId, t.assertionId] }), index('sso_assertions_expires_idx').on(t.expiresAt)],
);

/** Which svc user a connection's subject (SAML NameID, OIDC `sub`) is. */
export const ssoIdentities = pgTable(
  'sso_identities',
  {
    connectionId: text('connection_id')
      .notNull()
      .references(() => ssoConnections.id, { onDelete: 'cascade' }),
    subject: text('subject').notNull(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** What the IdP sent last time (mapped attributes), for the console. */
    lastProfile: jsonb('last_profile').$type<Record<string, unknown>>(),
    lastSignInAt: timestamp('last_sign_in_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.connectionId, t.subject] }), index('sso_identities_user_idx').on(t.userId)],
);

import { z } from 'zod';
import { ZListQuery, ZPage, ZSlug } from './lists.ts';
import { ZRoleKey } from './permissions.ts';

// An organization's SSO connections (docs/enterprise.md "SSO connections"). The id shape of ids.ts
// is written out: this module is also bundled into the console.

/** `ssoc_` + 20 base62: an SSO connection id. Anything else is a 400, never a lookup. */
export const ZSsoConnectionId = z.string().regex(/^ssoc_[0-9A-Za-z]{20}$/, 'expected an SSO connection id (ssoc_...)');

/** The largest IdP metadata document svc reads (uploaded or fetched): real ones are a few KB. */
export const SAML_METADATA_MAX_BYTES = 256 * 1024;

export const ZSsoProtocol = z.enum(['saml', 'oidc']).meta({ id: 'SsoProtocol' });
export type TSsoProtocol = z.infer<typeof ZSsoProtocol>;

const attributeName = z.string().trim().min(1).max(200);

/** Which SAML attribute or OIDC claim carries each thing; empty for the defaults. */
export const ZSsoAttributeMapping = z
  .object({
    email: attributeName.describe('default: the NameID (SAML) or `email` (OIDC)'),
    name: attributeName,
    groups: attributeName,
  })
  .meta({ id: 'SsoAttributeMapping' });
export type TSsoAttributeMapping = z.infer<typeof ZSsoAttributeMapping>;

export const DEFAULT_SAML_MAPPING: TSsoAttributeMapping = { email: 'email', name: 'name', groups: 'groups' };
export const DEFAULT_OIDC_MAPPING: TSsoAttributeMapping = { email: 'email', name: 'name', groups: 'groups' };

export const ZSsoGroupRole = z.object({ group: z.string().trim().min(1).max(256), roleKey: ZRoleKey }).meta({ id: 'SsoGroupRole' });

export const ZSsoConnection = z
  .object({
    id: z.string(),
    name: z.string(),
    protocol: ZSsoProtocol,
    enabled: z.boolean(),
    /** Where hosted sign-in sends a person to start (any svc page may link here). */
    signInUrl: z.string(),
    saml: z
      .object({
        /** svc's entityID for this connection (the Audience the IdP must name). */
        spEntityId: z.string(),
        /** The Assertion Consumer Service (HTTP-POST) the IdP posts to. */
        acsUrl: z.string(),
        /** svc's SP metadata for this connection, to give the IdP. */
        spMetadataUrl: z.string(),
        idpEntityId: z.string().nullable(),
        idpSsoUrl: z.string().nullable(),
        idpMetadataUrl: z.string().nullable(),
        /** How many IdP signing certificates are trusted. */
        idpCertificateCount: z.number().int(),
        allowIdpInitiated: z.boolean(),
      })
      .nullable(),
    oidc: z
      .object({
        issuer: z.string(),
        clientId: z.string(),
        /** The secret is write-only: whether one is stored. */
        clientSecretSet: z.boolean(),
        /** The redirect URI to register at the IdP. */
        redirectUri: z.string(),
      })
      .nullable(),
    attributeMapping: ZSsoAttributeMapping,
    defaultRoleKey: z.string(),
    groupRoles: z.array(ZSsoGroupRole),
    /** The last sign-in through the connection (kept to the minute). */
    lastSignInAt: z.string().nullable(),
    /** Sign-ins through the connection in the last 30 days (its `sso.signed_in` audit entries). */
    signInsLast30Days: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'SsoConnection' });
export type TSsoConnection = z.infer<typeof ZSsoConnection>;

export const ZSsoConnectionPage = ZPage(ZSsoConnection).meta({ id: 'SsoConnectionPage' });
export type TSsoConnectionPage = z.infer<typeof ZSsoConnectionPage>;

const organizationSlug = ZSlug.optional().describe(
  "the organization; default: the session's active workspace or the API key's organization",
);

export const ZListSsoConnectionsRequest = ZListQuery.extend({ organization_slug: organizationSlug });
export type TListSsoConnectionsRequest = z.infer<typeof ZListSsoConnectionsRequest>;

/** The IdP side of a SAML connection: its metadata (pasted or by URL), or its parts by hand. */
export const ZSamlIdpInput = z
  .object({
    metadataXml: z
      .string()
      .max(SAML_METADATA_MAX_BYTES, `IdP metadata is at most ${SAML_METADATA_MAX_BYTES} bytes`)
      .optional()
      .describe('the IdP metadata document (XML); no DOCTYPE'),
    metadataUrl: z.url().max(2000).optional().describe('an https URL svc fetches the IdP metadata from'),
    entityId: z.string().trim().min(1).max(1000).optional(),
    ssoUrl: z.url().max(2000).optional(),
    certificates: z.array(z.string().max(16_000)).min(1).max(4).optional().describe('PEM or base64 X.509 signing certificates'),
    allowIdpInitiated: z.boolean().optional().describe('accept sign-ins the IdP starts (default false)'),
  })
  .meta({ id: 'SamlIdpInput' });
export type TSamlIdpInput = z.infer<typeof ZSamlIdpInput>;

export const ZOidcIdpInput = z
  .object({
    issuer: z.url().max(2000).describe("the IdP's issuer; svc reads its /.well-known/openid-configuration"),
    clientId: z.string().trim().min(1).max(500),
    clientSecret: z.string().min(1).max(2000).optional(),
  })
  .meta({ id: 'OidcIdpInput' });
export type TOidcIdpInput = z.infer<typeof ZOidcIdpInput>;

const commonFields = {
  name: z.string().trim().min(1, 'name the connection').max(100),
  enabled: z.boolean().optional(),
  attributeMapping: ZSsoAttributeMapping.partial().optional(),
  defaultRoleKey: ZRoleKey.optional().describe('the role of a person no mapped group matches (default org_member)'),
  groupRoles: z.array(ZSsoGroupRole).max(100).optional(),
};

/** POST /v1/sso-connections. */
export const ZCreateSsoConnectionRequest = z
  .object({
    organization_slug: organizationSlug,
    protocol: ZSsoProtocol,
    saml: ZSamlIdpInput.optional(),
    oidc: ZOidcIdpInput.optional(),
    ...commonFields,
  })
  .refine((v) => (v.protocol === 'saml' ? v.saml !== undefined && v.oidc === undefined : v.oidc !== undefined && v.saml === undefined), {
    message: 'send `saml` with protocol saml, `oidc` with protocol oidc',
    path: ['protocol'],
  });
export type TCreateSsoConnectionRequest = z.infer<typeof ZCreateSsoConnectionRequest>;

export const ZSsoConnectionRef = z.object({ id: ZSsoConnectionId, organization_slug: organizationSlug });
export type TSsoConnectionRef = z.infer<typeof ZSsoConnectionRef>;

/** PATCH /v1/sso-connections/{id}: what is sent changes; the protocol does not. */
export const ZUpdateSsoConnectionRequest = z.object({
  id: ZSsoConnectionId,
  organization_slug: organizationSlug,
  name: commonFields.name.optional(),
  enabled: commonFields.enabled,
  attributeMapping: commonFields.attributeMapping,
  defaultRoleKey: commonFields.defaultRoleKey,
  groupRoles: commonFields.groupRoles,
  saml: ZSamlIdpInput.optional(),
  oidc: ZOidcIdpInput.partial().optional(),
});
export type TUpdateSsoConnectionRequest = z.infer<typeof ZUpdateSsoConnectionRequest>;

export const ZDeletedSsoConnection = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'DeletedSsoConnection' });
export type TDeletedSsoConnection = z.infer<typeof ZDeletedSsoConnection>;

/** POST /v1/sso-connections/{id}/test: a sign-in URL that shows what the IdP sent, makes nobody. */
export const ZSsoTestStart = z.object({ url: z.string(), expiresAt: z.string() }).meta({ id: 'SsoTestStart' });
export type TSsoTestStart = z.infer<typeof ZSsoTestStart>;

/**
 * Why an SSO sign-in was refused (docs/enterprise.md "Sign-in errors"): shown on svc's page and
 * logged; never which certificate or what the IdP sent beyond this.
 */
export const SSO_SIGN_IN_ERRORS = [
  'sso_connection_not_found',
  'sso_response_malformed',
  'sso_response_unsigned',
  'sso_signature_invalid',
  'sso_issuer_mismatch',
  'sso_audience_mismatch',
  'sso_recipient_mismatch',
  'sso_assertion_expired',
  'sso_assertion_not_yet_valid',
  'sso_assertion_replayed',
  'sso_in_response_to_mismatch',
  'sso_request_expired',
  'sso_idp_initiated_disabled',
  'sso_idp_error',
  'sso_email_missing',
  'sso_email_not_verified',
  'sso_domain_not_verified',
  'sso_membership_suspended',
  'sso_user_suspended',
  'sso_seat_unavailable',
] as const;
export type SsoSignInError = (typeof SSO_SIGN_IN_ERRORS)[number];

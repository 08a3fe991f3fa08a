import type { Db } from '@svc/db/client';
import type { SessionWithUser } from '@svc/db/queries/sessions';
import { findResourcePermissions } from '@svc/db/queries/token-resources';
import { isOrgAdminRole, mayExercise } from '../access/authorize.ts';
import { grantsOfRole } from '../access/role-grants.ts';
import { controlPlanePermissions } from '../mcp/resource.ts';
import { type GrantOrganization, OIDC_SCOPES, selectableOrganizations } from './accounts.ts';

/**
 * The consent of a third-party client's authorization (docs/oidc.md, "Consent"): which
 * organization it acts for, what it asks that the grant does not hold yet, and what the person
 * may grant of it. http/oidc/routes.ts shows the page (http/hosted/sign-in-pages.ts consentPage) and records the
 * answer; grants.ts loads the grant.
 */

/** What a third-party client asks a person for, as its consent page shows it. */
export type ConsentView = {
  /**
   * Its name and logo URL as its metadata document gives them, and the host of its client_id URL;
   * `registered`: a client that registered itself (dynamic client registration), whose `host` is
   * where its redirect goes.
   */
  client: { name: string; logoUrl: string | null; host: string; registered?: boolean };
  organization: { name: string; slug: string };
  /** The OpenID scopes asked for (openid, email, ...), in words. */
  scopes: { scope: string; words: string }[];
  /** Per API: each permission asked for, described, and whether the person holds it there. */
  apis: { name: string; identifier: string; permissions: { name: string; description: string; grantable: boolean }[] }[];
};

/** The OpenID scopes in words, as the consent page says them. */
const SCOPE_WORDS: Record<string, string> = {
  openid: 'Know who you are (your user id)',
  email: 'See your email address',
  profile: 'See your name',
  organization: 'See the organization it acts for, your role there and your permissions',
  offline_access: 'Keep its access when you are not using it (a refresh token)',
  entitlements: "See your organization's plan and features",
};

/** The organization a consent is for: the one the request names, the one picked, or the person's only one. */
export type ConsentOrganization = GrantOrganization & { name: string; roleKey: string };

/**
 * Which organization a third-party authorization acts for. Always one (a third-party token
 * carries the permissions the person holds in an organization, whether or not the client asked
 * for scope `organization`): `organization=<slug>` on the request, else the one picked on the
 * hosted page (kept in the interaction), else the person's only one. Several and none picked:
 * `pick`. None, or one the person is not an active member of: `refused`.
 */
export function consentOrganization(
  current: SessionWithUser,
  named: unknown,
  picked: unknown,
): { organization: ConsentOrganization } | { pick: true } | { refused: string } {
  const selectable = new Set(selectableOrganizations(current).map((o) => o.id));
  const memberships = current.memberships.filter((m) => selectable.has(m.organization.id));
  const of = (m: (typeof memberships)[number]) => ({
    organization: { id: m.organization.id, slug: m.organization.slug, name: m.organization.name, roleKey: m.roleKey },
  });
  if (typeof named === 'string') {
    const found = memberships.find((m) => m.organization.slug === named);
    return found ? of(found) : { refused: 'the person is not an active member of the organization the request names' };
  }
  if (typeof picked === 'string') {
    const found = memberships.find((m) => m.organization.id === picked);
    return found ? of(found) : { refused: 'the person is not an active member of the organization picked' };
  }
  const [only, ...others] = memberships;
  if (!only) {
    return { refused: 'the person is not an active member of any organization' };
  }
  return others.length === 0 ? of(only) : { pick: true };
}

/** What the consent asks for: OpenID scopes, and per API (resource indicator) its permissions. */
export type ConsentAsked = { oidcScopes: string[]; resourceScopes: Record<string, string[]> };

/**
 * What a consent prompt asks for: what the request asks that the grant has not met yet (granted
 * or refused before), as oidc-provider's consent prompt found it missing; everything the request
 * asks when nothing is missing (prompt=consent asks again).
 */
export function consentAsked(details: { params: Record<string, unknown>; prompt: { details: Record<string, unknown> } }): ConsentAsked {
  const missingOidc = details.prompt.details.missingOIDCScope;
  const missingResource = details.prompt.details.missingResourceScopes;
  const oidcScopes = Array.isArray(missingOidc) ? missingOidc.filter((s): s is string => typeof s === 'string') : [];
  const resourceScopes: Record<string, string[]> = {};
  if (missingResource && typeof missingResource === 'object') {
    for (const [indicator, scopes] of Object.entries(missingResource)) {
      if (Array.isArray(scopes)) {
        resourceScopes[indicator] = scopes.filter((s): s is string => typeof s === 'string');
      }
    }
  }
  if (oidcScopes.length > 0 || Object.keys(resourceScopes).length > 0) {
    return { oidcScopes, resourceScopes };
  }
  const requested = String(details.params.scope ?? '')
    .split(' ')
    .filter(Boolean);
  const known = new Set<string>(OIDC_SCOPES);
  return { oidcScopes: requested.filter((s) => known.has(s)), resourceScopes: {} };
}

/**
 * What the person may grant in the organization: their product permissions, and the control-plane
 * permissions they may exercise there (admin-only ones only as an org admin), which only svc's
 * own MCP server carries as scopes (modules/mcp/resource.ts). The two catalogs never share a
 * name (a product permission may not be named like a control-plane one), so each API's scopes
 * meet only their own kind.
 */
export async function heldPermissions(db: Db, organization: ConsentOrganization): Promise<Set<string>> {
  const grants = await grantsOfRole(db, organization.id, organization.roleKey);
  const control = new Set(grants?.control ?? []);
  const isOrgAdmin = isOrgAdminRole(organization.roleKey);
  return new Set([...(grants?.product ?? []), ...[...control].filter((p) => mayExercise(control, isOrgAdmin, p))]);
}

/** The consent page's view of what is asked: scopes in words, permissions described, each marked grantable or not. */
export async function consentView(
  db: Db,
  input: {
    client: ConsentView['client'];
    organization: ConsentOrganization;
    asked: ConsentAsked;
    held: Set<string>;
    /** svc's own MCP server's identifier (modules/mcp/resource.ts), worded from the permission catalog. */
    controlPlane: string;
  },
): Promise<ConsentView> {
  const apis: ConsentView['apis'] = [];
  for (const [identifier, scopes] of Object.entries(input.asked.resourceScopes)) {
    const resource = identifier === input.controlPlane ? controlPlanePermissions() : await findResourcePermissions(db, identifier);
    if (!resource || scopes.length === 0) {
      continue;
    }
    const described = new Map(resource.permissions.map((p) => [p.name, p.description]));
    apis.push({
      name: resource.name,
      identifier,
      permissions: scopes.map((name) => ({ name, description: described.get(name) ?? '', grantable: input.held.has(name) })),
    });
  }
  return {
    client: input.client,
    organization: { name: input.organization.name, slug: input.organization.slug },
    scopes: input.asked.oidcScopes.map((scope) => ({ scope, words: SCOPE_WORDS[scope] ?? scope })),
    apis,
  };
}

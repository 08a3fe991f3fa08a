import { AppError } from '@svc/contracts/errors';
import type { Permission } from '@svc/contracts/permissions';
import type { Db, Sql } from '@svc/db/client';
import type { TokenResource } from '@svc/db/queries/token-resources';
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import { isOrgAdminRole, mayExercise, permissionsOfRole } from '../access/authorize.ts';
import type { ApplicationCache } from '../applications/cache.ts';
import { mayConnect } from '../connected-apps/service.ts';
import { isControlPlaneTokenResource } from '../mcp/resource.ts';
import { type Entitlements, entitlementsOf } from '../subscriptions/entitlements.ts';
import { organizationOfGrant, standingOf } from './accounts.ts';
import { NOT_ALLOWED_BY_ORGANIZATION } from './grants.ts';
import { errors } from './library.ts';
import { isThirdPartyClient } from './metadata-documents.ts';
import { isRegisteredClient } from './registration.ts';
import type { TokenResources } from './resources.ts';

/** What the claims of svc's tokens are read from. */
export type ClaimDeps = {
  db: Db;
  sql: Sql;
  applications: ApplicationCache;
  resources: TokenResources;
  /** OpenIdProviderOptions.meterMachineToken. */
  meterMachineToken?:
    | ((input: { organizationId: string; clientId: string; tokenId: string; resource: string }) => Promise<void>)
    | undefined;
  /**
   * OpenIdProviderOptions.meterAgentToken: records the usage event of a third-party client's token
   * (SVC_USAGE_EVENT_TYPES.agentToken) in the organization it acts for, before it is issued.
   */
  meterAgentToken?:
    | ((input: {
        organizationId: string;
        clientId: string;
        tokenId: string;
        resource: string;
        actor: { type: 'user'; id: string };
      }) => Promise<void>)
    | undefined;
  /** Notes a third-party grant's use (connected-apps/last-used.ts), for the Connected apps list. */
  noteGrantUse?: ((grantId: string | undefined, registeredClientId?: string) => void) | undefined;
};

type IssuedToken = Parameters<NonNullable<Configuration['extraTokenClaims']>>[1];

/**
 * The claims svc adds to an access token (RFC 9068 JWT) when it is issued (docs/oidc.md,
 * docs/authorization.md): always `sid` (the svc session) and `grant_id` (its grant: userinfo
 * and introspection refuse the token once the grant is revoked, as after a replayed code).
 * With an organization chosen at sign-in (scope `organization`): `org_id`, `org_slug`,
 * `org_role` and `permissions`, the person's product permissions as they are now; for one of
 * the product's APIs (`resource`), only the permissions on that API, and only those the client
 * asked for when it asked for any (a third-party client: only those the person allowed it).
 * Never svc's control-plane permissions.
 */
export async function tokenClaims(
  deps: ClaimDeps,
  ctx: KoaContextWithOIDC,
  token: IssuedToken,
): Promise<Record<string, unknown> | undefined> {
  if (token.kind === 'ClientCredentials') {
    return machineTokenClaims(deps, ctx, token);
  }
  if (token.kind !== 'AccessToken' || !token.accountId) {
    return undefined;
  }
  const sid = token.sid;
  const base = { sid, grant_id: token.grantId };
  const thirdParty = isThirdPartyClient(token.clientId ?? '');
  const findGrant = async () => ctx.oidc.entities.Grant ?? (token.grantId ? await ctx.oidc.provider.Grant.find(token.grantId) : undefined);
  if (thirdParty) {
    // Each token of a third-party client (a code's, a refresh's) asks the organization it acts
    // for again: one that stopped allowing the client stops its refresh tokens at once.
    const organization = organizationOfGrant(await findGrant());
    if (!organization || !(await mayConnect(deps.db, { organizationId: organization.id, clientId: token.clientId ?? '' }))) {
      // invalid_grant, saying why (oidc-provider's own description would be "grant request is invalid").
      throw Object.assign(new errors.InvalidGrant(NOT_ALLOWED_BY_ORGANIZATION), { error_description: NOT_ALLOWED_BY_ORGANIZATION });
    }
    // Usage of the organization (docs/api.md "Usage event types svc records"): a plan limiting
    // agents' tokens, or a blocked subscription, refuses the token with 402.
    await meterOrRefuse(() =>
      deps.meterAgentToken?.({
        organizationId: organization.id,
        clientId: token.clientId ?? '',
        tokenId: token.jti ?? '',
        resource: token.resourceServer?.identifier() ?? '',
        actor: { type: 'user', id: token.accountId ?? '' },
      }),
    );
    // A registered client's last token keeps it from being deleted as unused (registration.ts).
    deps.noteGrantUse?.(token.grantId, isRegisteredClient(token.clientId ?? '') ? token.clientId : undefined);
  }
  const api = isApiResourceToken(token) ? await deps.resources.byIdentifier(token.resourceServer.identifier()) : null;
  const scopes = (token.scope ?? '').split(' ');
  if (!api && !scopes.includes('organization')) {
    return base;
  }
  const grant = await findGrant();
  const standing = await standingOf(deps.db, deps.sql, {
    sessionId: sid,
    userId: token.accountId,
    organization: organizationOfGrant(grant),
  });
  const organization = standing?.organization;
  // An API's token carries only the API's scopes; whether `entitlements` was asked for is the grant's.
  const oidcScopes = api ? (grant?.getOIDCScope() ?? '').split(' ') : scopes;
  const entitlements = organization && oidcScopes.includes('entitlements') ? await entitlementsClaim(deps, organization.org_id) : undefined;
  if (!api) {
    return { ...base, ...organization, ...entitlements };
  }
  if (!organization) {
    return { ...base, permissions: [] };
  }
  const onApi = permissionSetOf(api);
  const asked = scopes.filter((s) => onApi.has(s));
  if (isControlPlaneTokenResource(api)) {
    // svc's own MCP server: the control-plane permissions the person may exercise there now,
    // of those they allowed (configuration.ts admits only third-party clients to it).
    const control = new Set(await permissionsOfRole(deps.db, organization.org_id, organization.org_role));
    const isOrgAdmin = isOrgAdminRole(organization.org_role);
    const permissions = asked.filter((p) => control.has(p as Permission) && mayExercise(control, isOrgAdmin, p as Permission));
    return { ...base, org_id: organization.org_id, org_slug: organization.org_slug, org_role: organization.org_role, permissions };
  }
  // A third-party client's token scope is what the person allowed (its grant): never, for
  // asking nothing, everything the person holds, as an application's is.
  const wanted = asked.length > 0 || thirdParty ? new Set(asked) : onApi;
  return { ...base, ...organization, permissions: organization.permissions.filter((p) => wanted.has(p)), ...entitlements };
}

/**
 * Scope `entitlements`: the organization's plan key, subscription status and the features it
 * may use now (none while the subscription is inactive, cancelled or expired), as they are when
 * the token is issued, so an API gates a feature without a second call. Nothing for a workspace
 * without a subscription.
 */
export async function entitlementsClaim(deps: ClaimDeps, organizationId: string): Promise<{ entitlements: Entitlements } | undefined> {
  const entitlements = await entitlementsOf(deps.db, organizationId);
  return entitlements ? { entitlements } : undefined;
}

/**
 * A machine client's token (client credentials, docs/authorization.md): for one of the product's
 * APIs only, acting for the client's organization (`org_id`), with the permissions granted to
 * the client on that API (those it named in `scope`, when it named any); `sub` is the client.
 * A client holding nothing there is refused (invalid_target), and so is one naming another
 * organization. Each token is a usage event of the organization (usage/machine-tokens.ts: the
 * plan meters it and a blocked subscription refuses it with 402).
 */
async function machineTokenClaims(deps: ClaimDeps, ctx: KoaContextWithOIDC, token: IssuedToken): Promise<Record<string, unknown>> {
  const found = await deps.applications.byId(token.clientId ?? '');
  const application = found?.application;
  if (!found || application?.clientType !== 'machine' || application.status !== 'active') {
    throw new errors.UnauthorizedClient('only a machine client gets tokens by the client credentials grant');
  }
  // The token endpoint takes no `organization` parameter; one sent anyway is read from the body
  // oidc-provider parsed, so that naming another organization is refused rather than ignored.
  const named = (ctx.oidc.body as Record<string, unknown> | undefined)?.organization;
  if (named !== undefined && named !== found.organization.slug && named !== found.organization.id) {
    throw new errors.InvalidRequest('a machine client acts for its own organization only');
  }
  const api = isApiResourceToken(token) ? await deps.resources.byIdentifier(token.resourceServer.identifier()) : null;
  if (!api) {
    throw new errors.InvalidTarget('a machine client names the API it calls: resource=<API identifier>');
  }
  const onApi = permissionSetOf(api);
  const grant = machineGrantOf(application, api, onApi);
  const { held } = grant;
  if (held.length === 0) {
    throw new errors.InvalidTarget('this machine client holds no permission on that API');
  }
  const scope = token.scope ?? '';
  let permissions = grant.byScope.get(scope);
  if (!permissions) {
    const asked = new Set(scope.split(' ').filter((s) => onApi.has(s)));
    permissions = asked.size > 0 ? held.filter((p) => asked.has(p)) : held;
    if (grant.byScope.size < 64) {
      grant.byScope.set(scope, permissions);
    }
  }
  if (permissions.length === 0) {
    const asked = scope.split(' ').filter((s) => onApi.has(s));
    throw new errors.InvalidScope('this machine client holds none of the permissions it asked for', asked.join(' '));
  }
  await meterOrRefuse(() =>
    deps.meterMachineToken?.({
      organizationId: found.organization.id,
      clientId: application.id,
      tokenId: token.jti ?? '',
      resource: api.identifier,
    }),
  );
  const requested = typeof ctx.oidc.params?.scope === 'string' ? ctx.oidc.params.scope.split(' ') : [];
  const entitlements = requested.includes('entitlements') ? await entitlementsClaim(deps, found.organization.id) : undefined;
  return { org_id: found.organization.id, org_slug: found.organization.slug, permissions, ...entitlements };
}

/** Runs a meter; its 402 (the subscription rule) becomes the token endpoint's 402. */
async function meterOrRefuse(meter: () => Promise<void> | undefined): Promise<void> {
  try {
    await meter();
  } catch (error) {
    if (error instanceof AppError && error.status === 402) {
      throw new SubscriptionRefusal(error);
    }
    throw error;
  }
}

/*
 * What a token request derives from an API resource and an application is kept on those objects
 * (WeakMaps): the caches hand out the same object until the catalog or the application changes
 * (resources.ts, applications/cache.ts), and then the derived answers go with it. A machine
 * client asking for the same token again pays for no set or list.
 */
const permissionSets = new WeakMap<TokenResource, ReadonlySet<string>>();
const scopeStrings = new WeakMap<TokenResource, string>();
type MachineGrant = { held: readonly string[]; byScope: Map<string, readonly string[]> };
const machineGrants = new WeakMap<object, WeakMap<TokenResource, MachineGrant>>();

/** The API's permissions as a set. */
export function permissionSetOf(api: TokenResource): ReadonlySet<string> {
  let set = permissionSets.get(api);
  if (!set) {
    set = new Set(api.permissions);
    permissionSets.set(api, set);
  }
  return set;
}

/** The API's permissions as a token's `scope`: everything it may carry there. */
export function scopeOf(api: TokenResource): string {
  let scope = scopeStrings.get(api);
  if (scope === undefined) {
    scope = api.permissions.join(' ');
    scopeStrings.set(api, scope);
  }
  return scope;
}

const joinedScopes = new WeakMap<readonly string[], string>();

/** Permissions as a token's `scope` string (the same list, kept by machineGrantOf, is joined once). */
export function scopeOfPermissions(permissions: readonly string[]): string {
  let scope = joinedScopes.get(permissions);
  if (scope === undefined) {
    scope = permissions.join(' ');
    joinedScopes.set(permissions, scope);
  }
  return scope;
}

/** The permissions the machine client holds on the API, and its answers by requested scope. */
function machineGrantOf(
  application: { machinePermissions: readonly string[] },
  api: TokenResource,
  onApi: ReadonlySet<string>,
): MachineGrant {
  let byApi = machineGrants.get(application);
  if (!byApi) {
    byApi = new WeakMap();
    machineGrants.set(application, byApi);
  }
  let grant = byApi.get(api);
  if (!grant) {
    grant = { held: application.machinePermissions.filter((p) => onApi.has(p)), byScope: new Map() };
    byApi.set(api, grant);
  }
  return grant;
}

const CLIENT_RESOURCE_PREFIX = 'urn:svc:client:';

/** The resource indicator that stands for "this client's own API" (the token's audience is the client id). */
export function clientResource(clientId: string): string {
  return `${CLIENT_RESOURCE_PREFIX}${clientId}`;
}

/** Whether a token is for one of the product's API resources, not for the client itself. */
export function isApiResourceToken(token: { resourceServer?: { identifier(): string } | undefined }): token is {
  resourceServer: { identifier(): string };
} {
  const identifier = token.resourceServer?.identifier();
  return typeof identifier === 'string' && !identifier.startsWith(CLIENT_RESOURCE_PREFIX);
}

/**
 * A token refused by its organization's subscription: HTTP 402 with the subscription rule's code
 * (`subscription_inactive`, `subscription_limit_exceeded`) as the OAuth `error`, and its message
 * as `error_description`. The rest of svc's 402 body (`upgradeUrl`, `limit`, ...) is added to the
 * answer by refusalFieldsOnError (middleware.ts) from `refusal`.
 */
export class SubscriptionRefusal extends errors.OIDCProviderError {
  readonly refusal: AppError;
  constructor(refusal: AppError) {
    super(402, refusal.code);
    this.error_description = refusal.message;
    this.refusal = refusal;
  }
}

import type { IncomingMessage } from 'node:http';
import type { Db } from '@svc/db/client';
import { recordApplicationSignIn } from '@svc/db/queries/session-applications';
import type { SessionWithUser } from '@svc/db/queries/sessions';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { recordAudit, requestMetaOf } from '../access/audit.ts';
import type { ApplicationCache } from '../applications/cache.ts';
import { mayConnect } from '../connected-apps/service.ts';
import { requestIdOf } from '../shared/request-id.ts';
import { type GrantOrganization, organizationOfGrant, type SvcSessionOf, selectableOrganizations } from './accounts.ts';
import { membersOnlyOrganization } from './clients.ts';
import { errors, interactionPolicy } from './library.ts';
import { isThirdPartyClient } from './metadata-documents.ts';

/**
 * Who signs in and for which organization: the interaction policy that ties the provider's session
 * to the svc session, and the Grant every authorization gets (docs/oidc.md).
 */

/** What a grant is decided and recorded with. */
export type GrantDeps = {
  db: Db;
  applications: ApplicationCache;
  sessionOf: SvcSessionOf;
  clientIp: (req: IncomingMessage) => string;
};

/**
 * oidc-provider's default policy plus one login check: the provider's own session must be the
 * svc session of the browser (same user, same sign-in). No svc session, another user or a newer
 * sign-in: the login prompt, so the interaction hands off to the engine, and `prompt=none`
 * answers login_required.
 */
export function svcInteractionPolicy(sessionOf: SvcSessionOf) {
  const policy = interactionPolicy.base();
  const login = policy.get('login');
  if (!login) {
    throw new Error('oidc-provider has no login prompt');
  }
  login.checks.add(
    new interactionPolicy.Check('svc_session', 'End-User authentication is required', 'login_required', async (ctx) => {
      const current = await sessionOf(ctx.req);
      const session = ctx.oidc.session;
      if (!current || !session || current.user.id !== session.accountId || epochSeconds(current.session.createdAt) !== session.loginTs) {
        return interactionPolicy.Check.REQUEST_PROMPT;
      }
      return interactionPolicy.Check.NO_NEED_TO_PROMPT;
    }),
    0,
  );
  // oidc-provider asks native clients on loopback redirects for consent every time (another
  // program on the machine could sit on the port). The only native client is the keyless
  // development application, first-party like every application: no consent screen.
  policy.get('consent')?.checks.remove('native_client_prompt');
  return policy;
}

/**
 * Applications are first-party: no consent screen (third-party clients: consentedGrant). Every authorization gets a Grant of exactly
 * the scopes it asked for, bound to the svc session (sid = the svc session id) and, with scope
 * `organization`, to the organization it speaks for: the one `organization=<slug>` names (an
 * active membership, else access_denied), the person's only one, or the one picked on the hosted
 * page. Undefined while a person in several organizations has not picked yet: the consent
 * prompt then sends them to the interaction.
 */
export async function grantFor(deps: GrantDeps, ctx: KoaContextWithOIDC) {
  const { oidc } = ctx;
  const client = oidc.client;
  const accountId = oidc.session?.accountId;
  const current = await deps.sessionOf(ctx.req);
  if (!client || !accountId || !current || current.user.id !== accountId) {
    return undefined;
  }
  // signInAudience `members`: only an active member of the application's organization.
  const membersOf = membersOnlyOrganization(client.metadata());
  if (membersOf !== undefined && !current.memberships.some((m) => m.organization.id === membersOf)) {
    throw new errors.AccessDenied('this application admits only members of its organization');
  }
  oidc.session?.sidFor(client.clientId, current.session.id);
  if (isThirdPartyClient(client.clientId)) {
    return consentedGrant(deps.db, ctx, current, accountId);
  }
  const scopes = [...oidc.requestParamScopes];
  let organization: GrantOrganization | undefined;
  if (scopes.includes('organization')) {
    const selectable = selectableOrganizations(current);
    const named = oidc.params?.organization;
    const picked = (oidc.result as { organization?: unknown } | undefined)?.organization;
    if (typeof named === 'string') {
      organization = selectable.find((o) => o.slug === named);
      if (!organization) {
        throw new errors.AccessDenied('the person is not an active member of the organization the request names');
      }
    } else if (typeof picked === 'string') {
      organization = selectable.find((o) => o.id === picked);
      if (!organization) {
        throw new errors.AccessDenied('the person is not an active member of the organization picked');
      }
    } else if (selectable.length === 0) {
      throw new errors.AccessDenied('the person is not an active member of any organization');
    } else if (selectable.length === 1) {
      organization = selectable[0];
    } else {
      return undefined;
    }
  }
  const grant = new oidc.provider.Grant({ accountId, clientId: client.clientId });
  grant.addOIDCScope([...oidc.requestParamOIDCScopes].join(' '));
  for (const [indicator, server] of Object.entries(oidc.resourceServers ?? {})) {
    grant.addResourceScope(indicator, scopes.filter((s) => server.scopes.has(s)).join(' '));
  }
  Object.assign(grant, { organization });
  await grant.save();
  await recordSignIn(deps, ctx, current, client.clientId, organization);
  return grant;
}

/**
 * A third-party client (metadata-documents.ts) gets only what the person allowed on the consent
 * page (http/oidc/routes.ts): the grant that page saved (the interaction's result), else the one this
 * provider session already holds for the client, as long as it is the person's, for the client,
 * and for an organization the person is still an active member of (and the one the request
 * names, if it names one). Undefined otherwise: oidc-provider then asks for consent, as it does
 * when the request asks for more than the grant holds (its consent prompt compares them).
 */
async function consentedGrant(db: Db, ctx: KoaContextWithOIDC, current: SessionWithUser, accountId: string) {
  const { oidc } = ctx;
  const clientId = oidc.client?.clientId ?? '';
  const fromConsent = (oidc.result as { consent?: { grantId?: unknown } } | undefined)?.consent?.grantId;
  const grantId = typeof fromConsent === 'string' ? fromConsent : oidc.session?.grantIdFor(clientId);
  if (!grantId) {
    return undefined;
  }
  const grant = await oidc.provider.Grant.find(grantId);
  const organization = organizationOfGrant(grant);
  if (!grant || grant.accountId !== accountId || grant.clientId !== clientId || !organization) {
    return undefined;
  }
  const named = oidc.params?.organization;
  if (typeof named === 'string' && named !== organization.slug) {
    return undefined;
  }
  if (!selectableOrganizations(current).some((o) => o.id === organization.id)) {
    return undefined;
  }
  // The organization's choice of third parties (connected-apps/service.ts), as it is now: a
  // client it no longer allows gets no authorization from an earlier consent either.
  if (!(await mayConnect(db, { organizationId: organization.id, clientId }))) {
    throw new errors.AccessDenied(NOT_ALLOWED_BY_ORGANIZATION);
  }
  return grant;
}

/** Why a third-party client is refused by the organization it would act for. */
export const NOT_ALLOWED_BY_ORGANIZATION =
  'the organization does not allow this app to connect (its admins choose which third-party apps may)';

/**
 * Records the application sign-in of the svc session (session_applications, one upsert). The
 * first sign-in of the session to the application (or the first since it ended) is audited as
 * `session.created` in the organization the grant speaks for, else the application's, which
 * announces it to that organization's webhook endpoints in the same transaction.
 */
async function recordSignIn(
  deps: GrantDeps,
  ctx: KoaContextWithOIDC,
  current: SessionWithUser,
  applicationId: string,
  organization: GrantOrganization | undefined,
): Promise<void> {
  const found = await deps.applications.byId(applicationId);
  if (!found) {
    return;
  }
  const { application } = found;
  await deps.db.transaction(async (tx) => {
    const { started } = await recordApplicationSignIn(tx, {
      sessionId: current.session.id,
      applicationId,
      organizationId: organization?.id ?? null,
      at: new Date(),
    });
    if (!started) {
      return;
    }
    await recordAudit(tx, { kind: 'user', ...current }, requestMetaOf(ctx.req, deps.clientIp, requestIdOf(ctx.req)), {
      tenantId: organization?.id ?? application.tenantId,
      action: 'session.created',
      target: { type: 'session', id: current.session.id },
      summary: {
        userId: current.user.id,
        email: current.user.email,
        application: { id: application.id, name: application.name, organizationId: application.tenantId },
      },
    });
  });
}

/** Seconds since the epoch, as oidc-provider keeps times. */
function epochSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

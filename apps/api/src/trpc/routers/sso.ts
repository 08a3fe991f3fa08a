import {
  ZCreateSsoConnectionRequest,
  ZDeletedSsoConnection,
  ZListSsoConnectionsRequest,
  ZSsoConnection,
  ZSsoConnectionPage,
  ZSsoConnectionRef,
  ZSsoTestStart,
  ZUpdateSsoConnectionRequest,
} from '@svc/contracts/sso';
import { createGuardedFetch } from '@svc/jobs/webhooks/guarded-fetch';
import type { AppServices } from '../../context.ts';
import {
  createSsoConnection,
  deleteSsoConnection,
  getSsoConnection,
  listSsoConnections,
  SSO_CONNECTION_RECORD,
  type SsoDeps,
  testSsoConnection,
  updateSsoConnection,
} from '../../modules/sso/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure, controlProcedureWithQuerySlug } from '../procedures.ts';

const tags = ['sso-connections'];

const depsOf = new WeakMap<AppServices, SsoDeps>();

/** One guarded fetch per process: the webhook sender's address rules (docs/architecture.md section 7). */
export function ssoDeps(services: AppServices): SsoDeps {
  let deps = depsOf.get(services);
  if (!deps) {
    const guarded = createGuardedFetch({ allowPrivate: services.config.webhooks.allowPrivate, connectTimeoutMs: 2_500 });
    deps = {
      db: services.db,
      publicUrl: services.config.publicUrl,
      secretBox: services.secretBox,
      fetch: (url, init) => guarded(url, init),
    };
    depsOf.set(services, deps);
  }
  return deps;
}

const SAML_INPUT_ERRORS = [
  'unknown_role',
  'sso_metadata_invalid',
  'sso_metadata_unreachable',
  'sso_connection_incomplete',
  'platform_workspace_managed',
] as const;

/**
 * An organization's SSO connections (docs/enterprise.md "SSO connections"). Reads need sso.read,
 * changes sso.manage (an org admin's: a connection makes members). Tenant API keys with the scope
 * may call every route.
 */
const read = { permission: 'sso.read', organization: 'slug' } as const;
const manage = { permission: 'sso.manage', organization: 'slug', adminOnly: true } as const;
const readOne = { permission: 'sso.read', organization: SSO_CONNECTION_RECORD } as const;
const manageOne = { permission: 'sso.manage', organization: SSO_CONNECTION_RECORD, adminOnly: true } as const;

export const ssoConnectionsRouter = router({
  list: controlProcedure
    .meta({ access: read, openapi: { method: 'GET', path: '/sso-connections', tags, summary: "List an organization's SSO connections" } })
    .input(ZListSsoConnectionsRequest)
    .use(resolveAccess)
    .output(ZSsoConnectionPage)
    .query(({ ctx, input }) => listSsoConnections(ssoDeps(ctx.services), ctx.access, input)),
  create: controlProcedure
    .meta({
      access: manage,
      errors: SAML_INPUT_ERRORS,
      openapi: {
        method: 'POST',
        path: '/sso-connections',
        tags,
        summary: 'Add a SAML or OIDC connection to the organization’s identity provider',
      },
      successStatus: 201,
    })
    .input(ZCreateSsoConnectionRequest)
    .use(resolveAccess)
    .output(ZSsoConnection)
    .mutation(({ ctx, input }) => createSsoConnection(ssoDeps(ctx.services), ctx.access, ctx.request, input)),
  get: controlProcedure
    .meta({
      access: readOne,
      openapi: { method: 'GET', path: '/sso-connections/{id}', tags, summary: 'Read an SSO connection and its service-provider URLs' },
    })
    .input(ZSsoConnectionRef)
    .use(resolveAccess)
    .output(ZSsoConnection)
    .query(({ ctx, input }) => getSsoConnection(ssoDeps(ctx.services), ctx.access, input)),
  update: controlProcedure
    .meta({
      access: manageOne,
      errors: SAML_INPUT_ERRORS,
      openapi: { method: 'PATCH', path: '/sso-connections/{id}', tags, summary: 'Change an SSO connection: IdP, mapping, roles, enabled' },
    })
    .input(ZUpdateSsoConnectionRequest)
    .use(resolveAccess)
    .output(ZSsoConnection)
    .mutation(({ ctx, input }) => updateSsoConnection(ssoDeps(ctx.services), ctx.access, ctx.request, input)),
  delete: controlProcedure
    .meta({ access: manageOne, openapi: { method: 'DELETE', path: '/sso-connections/{id}', tags, summary: 'Remove an SSO connection' } })
    .input(ZSsoConnectionRef)
    .use(resolveAccess)
    .output(ZDeletedSsoConnection)
    .mutation(({ ctx, input }) => deleteSsoConnection(ssoDeps(ctx.services), ctx.access, ctx.request, input)),
  test: controlProcedureWithQuerySlug
    .meta({
      access: manageOne,
      openapi: {
        method: 'POST',
        path: '/sso-connections/{id}/test',
        tags,
        summary: 'Start a test sign-in: the URL opens the IdP and ends on a page showing what it sent; nobody is signed in',
      },
    })
    .input(ZSsoConnectionRef)
    .use(resolveAccess)
    .output(ZSsoTestStart)
    .mutation(({ ctx, input }) => testSsoConnection(ssoDeps(ctx.services), ctx.access, input)),
});

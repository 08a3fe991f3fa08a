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
import { router } from '../../trpc/init.ts';
import { controlProcedure, controlProcedureWithQuerySlug } from '../../trpc/procedures.ts';
import {
  createSsoConnection,
  deleteSsoConnection,
  getSsoConnection,
  listSsoConnections,
  type SsoDeps,
  testSsoConnection,
  updateSsoConnection,
} from './service.ts';

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
export const ssoConnectionsRouter = router({
  list: controlProcedure
    .meta({ openapi: { method: 'GET', path: '/sso-connections', tags, summary: "List an organization's SSO connections" } })
    .input(ZListSsoConnectionsRequest)
    .output(ZSsoConnectionPage)
    .query(({ ctx, input }) => listSsoConnections(ssoDeps(ctx.services), ctx.principal, input)),
  create: controlProcedure
    .meta({
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
    .output(ZSsoConnection)
    .mutation(({ ctx, input }) => createSsoConnection(ssoDeps(ctx.services), ctx.principal, ctx.request, input)),
  get: controlProcedure
    .meta({
      openapi: { method: 'GET', path: '/sso-connections/{id}', tags, summary: 'Read an SSO connection and its service-provider URLs' },
    })
    .input(ZSsoConnectionRef)
    .output(ZSsoConnection)
    .query(({ ctx, input }) => getSsoConnection(ssoDeps(ctx.services), ctx.principal, input)),
  update: controlProcedure
    .meta({
      errors: SAML_INPUT_ERRORS,
      openapi: { method: 'PATCH', path: '/sso-connections/{id}', tags, summary: 'Change an SSO connection: IdP, mapping, roles, enabled' },
    })
    .input(ZUpdateSsoConnectionRequest)
    .output(ZSsoConnection)
    .mutation(({ ctx, input }) => updateSsoConnection(ssoDeps(ctx.services), ctx.principal, ctx.request, input)),
  delete: controlProcedure
    .meta({ openapi: { method: 'DELETE', path: '/sso-connections/{id}', tags, summary: 'Remove an SSO connection' } })
    .input(ZSsoConnectionRef)
    .output(ZDeletedSsoConnection)
    .mutation(({ ctx, input }) => deleteSsoConnection(ssoDeps(ctx.services), ctx.principal, ctx.request, input)),
  test: controlProcedureWithQuerySlug
    .meta({
      openapi: {
        method: 'POST',
        path: '/sso-connections/{id}/test',
        tags,
        summary: 'Start a test sign-in: the URL opens the IdP and ends on a page showing what it sent; nobody is signed in',
      },
    })
    .input(ZSsoConnectionRef)
    .output(ZSsoTestStart)
    .mutation(({ ctx, input }) => testSsoConnection(ssoDeps(ctx.services), ctx.principal, input)),
});

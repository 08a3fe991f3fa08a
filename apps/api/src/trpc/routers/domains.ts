import {
  ZCreateDomainRequest,
  ZDeletedDomain,
  ZDomain,
  ZDomainPage,
  ZDomainRef,
  ZListDomainsRequest,
  ZUpdateDomainRequest,
} from '@svc/contracts/domains';
import {
  createDomain,
  DOMAIN_RECORD,
  deleteDomain,
  getDomain,
  listDomains,
  updateDomain,
  verifyDomain,
} from '../../modules/domains/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure, controlProcedureWithQuerySlug } from '../procedures.ts';

const tags = ['domains'];

/**
 * An organization's email domains (docs/enterprise.md "Domains"). Reads need domains.read,
 * changes domains.manage (an org admin's: auto-join makes members). Tenant API keys with the
 * scope may call every route.
 */
const read = { permission: 'domains.read', organization: 'slug' } as const;
const manage = { permission: 'domains.manage', organization: 'slug', adminOnly: true } as const;
const readOne = { permission: 'domains.read', organization: DOMAIN_RECORD } as const;
const manageOne = { permission: 'domains.manage', organization: DOMAIN_RECORD, adminOnly: true } as const;

export const domainsRouter = router({
  list: controlProcedure
    .meta({ access: read, openapi: { method: 'GET', path: '/domains', tags, summary: "List an organization's email domains" } })
    .input(ZListDomainsRequest)
    .use(resolveAccess)
    .output(ZDomainPage)
    .query(({ ctx, input }) => listDomains(ctx.services.db, ctx.access, input)),
  create: controlProcedure
    .meta({
      access: manage,
      errors: ['domain_invalid', 'domain_public_suffix', 'domain_already_added', 'domain_verified_elsewhere'],
      openapi: {
        method: 'POST',
        path: '/domains',
        tags,
        summary: 'Add an email domain (pending); the answer names the DNS TXT record that verifies it',
      },
      successStatus: 201,
    })
    .input(ZCreateDomainRequest)
    .use(resolveAccess)
    .output(ZDomain)
    .mutation(({ ctx, input }) => createDomain(ctx.services.db, ctx.access, ctx.request, input)),
  get: controlProcedure
    .meta({
      access: readOne,
      openapi: { method: 'GET', path: '/domains/{id}', tags, summary: 'Read an email domain and its verification record' },
    })
    .input(ZDomainRef)
    .use(resolveAccess)
    .output(ZDomain)
    .query(({ ctx, input }) => getDomain(ctx.services.db, ctx.access, input)),
  update: controlProcedure
    .meta({
      access: manageOne,
      errors: ['unknown_role', 'platform_workspace_managed'],
      openapi: {
        method: 'PATCH',
        path: '/domains/{id}',
        tags,
        summary: "Choose what a domain's people get at sign-in: none, auto_join with a role, or require_sso",
      },
    })
    .input(ZUpdateDomainRequest)
    .use(resolveAccess)
    .output(ZDomain)
    .mutation(({ ctx, input }) => updateDomain(ctx.services.db, ctx.access, ctx.request, input)),
  delete: controlProcedure
    .meta({
      access: manageOne,
      openapi: { method: 'DELETE', path: '/domains/{id}', tags, summary: 'Remove an email domain from the organization' },
    })
    .input(ZDomainRef)
    .use(resolveAccess)
    .output(ZDeletedDomain)
    .mutation(({ ctx, input }) => deleteDomain(ctx.services.db, ctx.access, ctx.request, input)),
  verify: controlProcedureWithQuerySlug
    .meta({
      access: manageOne,
      errors: ['domain_verified_elsewhere'],
      openapi: {
        method: 'POST',
        path: '/domains/{id}/verify',
        tags,
        summary: "Look up the domain's TXT record now: verified when found, else pending with the reason",
      },
    })
    .input(ZDomainRef)
    .use(resolveAccess)
    .output(ZDomain)
    .mutation(({ ctx, input }) => verifyDomain(ctx.services.db, ctx.services.config.dns, ctx.access, ctx.request, input)),
});

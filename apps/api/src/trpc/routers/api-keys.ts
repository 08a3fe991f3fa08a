import {
  ZApiKey,
  ZApiKeyActionRequest,
  ZApiKeyPage,
  ZApiKeyWithSecret,
  ZCreateApiKeyRequest,
  ZListApiKeysRequest,
} from '@svc/contracts/api-keys';
import { API_KEY_RECORD, createApiKey, getApiKey, listApiKeys, revokeApiKey, rotateApiKey } from '../../modules/api-keys/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure, userControlProcedure } from '../procedures.ts';

/**
 * Tenant API keys (docs/api.md "API keys"). Create and rotate hand out a raw secret, so only a signed-in
 * person may call them: a key that could mint or re-secret keys would be a privilege escalation
 * (a key rotating a broader key would obtain its secret). Listing and revoking are open to keys
 * with the scope (a leaked key can be revoked by a sibling service).
 */
const read = { permission: 'api_keys.read', organization: 'id' } as const;
const manage = { permission: 'api_keys.manage', organization: 'id' } as const;
const readOne = { permission: 'api_keys.read', organization: API_KEY_RECORD } as const;
const manageOne = { permission: 'api_keys.manage', organization: API_KEY_RECORD } as const;

export const apiKeysRouter = router({
  list: controlProcedure
    .meta({
      access: read,
      openapi: {
        method: 'GET',
        path: '/tenants/{id}/api-keys',
        tags: ['api-keys'],
        summary: "List an organization's API keys (metadata only)",
      },
    })
    .input(ZListApiKeysRequest)
    .use(resolveAccess)
    .output(ZApiKeyPage)
    .query(({ ctx, input }) => listApiKeys(ctx.services.db, ctx.access, input)),
  get: controlProcedure
    .meta({
      access: readOne,
      openapi: { method: 'GET', path: '/api-keys/{id}', tags: ['api-keys'], summary: 'Read one API key (metadata only)' },
    })
    .input(ZApiKeyActionRequest)
    .use(resolveAccess)
    .output(ZApiKey)
    .query(({ ctx, input }) => getApiKey(ctx.services.db, ctx.access, input)),
  create: userControlProcedure
    .meta({
      access: manage,
      openapi: {
        method: 'POST',
        path: '/tenants/{id}/api-keys',
        tags: ['api-keys'],
        summary: 'Create an API key; the raw secretKey is returned this once',
      },
      successStatus: 201,
    })
    .input(ZCreateApiKeyRequest)
    .use(resolveAccess)
    .output(ZApiKeyWithSecret)
    .mutation(({ ctx, input }) => createApiKey(ctx.services.db, { ...ctx.access, principal: ctx.principal }, ctx.request, input)),
  rotate: userControlProcedure
    .meta({
      access: manageOne,
      errors: ['conflict'],
      openapi: {
        method: 'POST',
        path: '/api-keys/{id}/rotate',
        tags: ['api-keys'],
        summary: 'Replace the secret of an API key; the new secretKey is returned this once, the old one stops working',
      },
    })
    .input(ZApiKeyActionRequest)
    .use(resolveAccess)
    .output(ZApiKeyWithSecret)
    .mutation(({ ctx, input }) => rotateApiKey(ctx.services.db, { ...ctx.access, principal: ctx.principal }, ctx.request, input)),
  revoke: controlProcedure
    .meta({
      access: manageOne,
      openapi: { method: 'POST', path: '/api-keys/{id}/revoke', tags: ['api-keys'], summary: 'Revoke an API key (idempotent)' },
    })
    .input(ZApiKeyActionRequest)
    .use(resolveAccess)
    .output(ZApiKey)
    .mutation(({ ctx, input }) => revokeApiKey(ctx.services.db, ctx.access, ctx.request, input)),
});

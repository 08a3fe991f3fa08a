import {
  ZApiKey,
  ZApiKeyActionRequest,
  ZApiKeyPage,
  ZApiKeyWithSecret,
  ZCreateApiKeyRequest,
  ZListApiKeysRequest,
} from '@svc/contracts/api-keys';
import { router } from '../../trpc/init.ts';
import { controlProcedure, userControlProcedure } from '../../trpc/procedures.ts';
import { createApiKey, getApiKey, listApiKeys, revokeApiKey, rotateApiKey } from './service.ts';

/**
 * Tenant API keys (docs/api.md "API keys"). Create and rotate hand out a raw secret, so only a signed-in
 * person may call them: a key that could mint or re-secret keys would be a privilege escalation
 * (a key rotating a broader key would obtain its secret). Listing and revoking are open to keys
 * with the scope (a leaked key can be revoked by a sibling service).
 */
export const apiKeysRouter = router({
  list: controlProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/tenants/{id}/api-keys',
        tags: ['api-keys'],
        summary: "List an organization's API keys (metadata only)",
      },
    })
    .input(ZListApiKeysRequest)
    .output(ZApiKeyPage)
    .query(({ ctx, input }) => listApiKeys(ctx.services.db, ctx.principal, input)),
  get: controlProcedure
    .meta({
      openapi: { method: 'GET', path: '/api-keys/{id}', tags: ['api-keys'], summary: 'Read one API key (metadata only)' },
    })
    .input(ZApiKeyActionRequest)
    .output(ZApiKey)
    .query(({ ctx, input }) => getApiKey(ctx.services.db, ctx.principal, input)),
  create: userControlProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/tenants/{id}/api-keys',
        tags: ['api-keys'],
        summary: 'Create an API key; the raw secretKey is returned this once',
      },
      successStatus: 201,
    })
    .input(ZCreateApiKeyRequest)
    .output(ZApiKeyWithSecret)
    .mutation(({ ctx, input }) => createApiKey(ctx.services.db, ctx.principal, ctx.request, input)),
  rotate: userControlProcedure
    .meta({
      errors: ['conflict'],
      openapi: {
        method: 'POST',
        path: '/api-keys/{id}/rotate',
        tags: ['api-keys'],
        summary: 'Replace the secret of an API key; the new secretKey is returned this once, the old one stops working',
      },
    })
    .input(ZApiKeyActionRequest)
    .output(ZApiKeyWithSecret)
    .mutation(({ ctx, input }) => rotateApiKey(ctx.services.db, ctx.principal, ctx.request, input)),
  revoke: controlProcedure
    .meta({
      openapi: { method: 'POST', path: '/api-keys/{id}/revoke', tags: ['api-keys'], summary: 'Revoke an API key (idempotent)' },
    })
    .input(ZApiKeyActionRequest)
    .output(ZApiKey)
    .mutation(({ ctx, input }) => revokeApiKey(ctx.services.db, ctx.principal, ctx.request, input)),
});

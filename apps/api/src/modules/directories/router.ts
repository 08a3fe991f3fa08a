import {
  ZCreateDirectoryRequest,
  ZDeletedDirectory,
  ZDirectory,
  ZDirectoryPage,
  ZDirectoryRef,
  ZDirectoryRequestLog,
  ZDirectoryWithToken,
  ZListDirectoriesRequest,
  ZUpdateDirectoryRequest,
} from '@svc/contracts/directories';
import { router } from '../../trpc/init.ts';
import { controlProcedure } from '../../trpc/procedures.ts';
import {
  createDirectory,
  deleteDirectory,
  getDirectory,
  listDirectories,
  listDirectoryRequests,
  rotateDirectoryToken,
  updateDirectory,
} from './service.ts';

const tags = ['directories'];

/**
 * An organization's SCIM directories (docs/enterprise.md "Directory sync"). Reads need
 * directories.read, changes directories.manage (an org admin's: a directory adds and removes
 * members). Tenant API keys with the scope may call every route.
 */
export const directoriesRouter = router({
  list: controlProcedure
    .meta({ openapi: { method: 'GET', path: '/directories', tags, summary: "List an organization's SCIM directories" } })
    .input(ZListDirectoriesRequest)
    .output(ZDirectoryPage)
    .query(({ ctx, input }) => listDirectories(deps(ctx), ctx.principal, input)),
  create: controlProcedure
    .meta({
      errors: ['unknown_role', 'platform_workspace_managed'],
      openapi: {
        method: 'POST',
        path: '/directories',
        tags,
        summary: 'Create a SCIM directory; the answer carries its base URL and bearer token (shown once)',
      },
      successStatus: 201,
    })
    .input(ZCreateDirectoryRequest)
    .output(ZDirectoryWithToken)
    .mutation(({ ctx, input }) => createDirectory(deps(ctx), ctx.principal, ctx.request, input)),
  get: controlProcedure
    .meta({ openapi: { method: 'GET', path: '/directories/{id}', tags, summary: 'Read a SCIM directory (never its token)' } })
    .input(ZDirectoryRef)
    .output(ZDirectory)
    .query(({ ctx, input }) => getDirectory(deps(ctx), ctx.principal, input)),
  update: controlProcedure
    .meta({
      errors: ['unknown_role'],
      openapi: {
        method: 'PATCH',
        path: '/directories/{id}',
        tags,
        summary: "Rename a directory or change its default role and group-to-role mapping (provisioned people's roles follow)",
      },
    })
    .input(ZUpdateDirectoryRequest)
    .output(ZDirectory)
    .mutation(({ ctx, input }) => updateDirectory(deps(ctx), ctx.principal, ctx.request, input)),
  rotateToken: controlProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/directories/{id}/rotate-token',
        tags,
        summary: 'Give a directory a new bearer token (shown once); the old one stops working at once',
      },
    })
    .input(ZDirectoryRef)
    .output(ZDirectoryWithToken)
    .mutation(({ ctx, input }) => rotateDirectoryToken(deps(ctx), ctx.principal, ctx.request, input)),
  delete: controlProcedure
    .meta({ openapi: { method: 'DELETE', path: '/directories/{id}', tags, summary: 'Delete a SCIM directory and its token' } })
    .input(ZDirectoryRef)
    .output(ZDeletedDirectory)
    .mutation(({ ctx, input }) => deleteDirectory(deps(ctx), ctx.principal, ctx.request, input)),
  requests: controlProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/directories/{id}/requests',
        tags,
        summary: 'The last SCIM requests a directory received: method, path and status',
      },
    })
    .input(ZDirectoryRef)
    .output(ZDirectoryRequestLog)
    .query(({ ctx, input }) => listDirectoryRequests(deps(ctx), ctx.principal, input)),
});

function deps(ctx: { services: { db: import('@svc/db/client').Db; config: { publicUrl: string } } }) {
  return { db: ctx.services.db, publicUrl: ctx.services.config.publicUrl };
}

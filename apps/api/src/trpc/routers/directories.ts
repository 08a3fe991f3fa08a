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
import {
  createDirectory,
  DIRECTORY_RECORD,
  deleteDirectory,
  getDirectory,
  listDirectories,
  listDirectoryRequests,
  rotateDirectoryToken,
  updateDirectory,
} from '../../modules/directories/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure } from '../procedures.ts';

const tags = ['directories'];

/**
 * An organization's SCIM directories (docs/enterprise.md "Directory sync"). Reads need
 * directories.read, changes directories.manage (an org admin's: a directory adds and removes
 * members). Tenant API keys with the scope may call every route.
 */
const read = { permission: 'directories.read', organization: 'slug' } as const;
const manage = { permission: 'directories.manage', organization: 'slug', adminOnly: true } as const;
const readOne = { permission: 'directories.read', organization: DIRECTORY_RECORD } as const;
const manageOne = { permission: 'directories.manage', organization: DIRECTORY_RECORD, adminOnly: true } as const;

export const directoriesRouter = router({
  list: controlProcedure
    .meta({ access: read, openapi: { method: 'GET', path: '/directories', tags, summary: "List an organization's SCIM directories" } })
    .input(ZListDirectoriesRequest)
    .use(resolveAccess)
    .output(ZDirectoryPage)
    .query(({ ctx, input }) => listDirectories(deps(ctx), ctx.access, input)),
  create: controlProcedure
    .meta({
      access: manage,
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
    .use(resolveAccess)
    .output(ZDirectoryWithToken)
    .mutation(({ ctx, input }) => createDirectory(deps(ctx), ctx.access, ctx.request, input)),
  get: controlProcedure
    .meta({
      access: readOne,
      openapi: { method: 'GET', path: '/directories/{id}', tags, summary: 'Read a SCIM directory (never its token)' },
    })
    .input(ZDirectoryRef)
    .use(resolveAccess)
    .output(ZDirectory)
    .query(({ ctx, input }) => getDirectory(deps(ctx), ctx.access, input)),
  update: controlProcedure
    .meta({
      access: manageOne,
      errors: ['unknown_role'],
      openapi: {
        method: 'PATCH',
        path: '/directories/{id}',
        tags,
        summary: "Rename a directory or change its default role and group-to-role mapping (provisioned people's roles follow)",
      },
    })
    .input(ZUpdateDirectoryRequest)
    .use(resolveAccess)
    .output(ZDirectory)
    .mutation(({ ctx, input }) => updateDirectory(deps(ctx), ctx.access, ctx.request, input)),
  rotateToken: controlProcedure
    .meta({
      access: manageOne,
      openapi: {
        method: 'POST',
        path: '/directories/{id}/rotate-token',
        tags,
        summary: 'Give a directory a new bearer token (shown once); the old one stops working at once',
      },
    })
    .input(ZDirectoryRef)
    .use(resolveAccess)
    .output(ZDirectoryWithToken)
    .mutation(({ ctx, input }) => rotateDirectoryToken(deps(ctx), ctx.access, ctx.request, input)),
  delete: controlProcedure
    .meta({
      access: manageOne,
      openapi: { method: 'DELETE', path: '/directories/{id}', tags, summary: 'Delete a SCIM directory and its token' },
    })
    .input(ZDirectoryRef)
    .use(resolveAccess)
    .output(ZDeletedDirectory)
    .mutation(({ ctx, input }) => deleteDirectory(deps(ctx), ctx.access, ctx.request, input)),
  requests: controlProcedure
    .meta({
      access: readOne,
      openapi: {
        method: 'GET',
        path: '/directories/{id}/requests',
        tags,
        summary: 'The last SCIM requests a directory received: method, path and status',
      },
    })
    .input(ZDirectoryRef)
    .use(resolveAccess)
    .output(ZDirectoryRequestLog)
    .query(({ ctx, input }) => listDirectoryRequests(deps(ctx), ctx.access, input)),
});

function deps(ctx: { services: { db: import('@svc/db/client').Db; config: { publicUrl: string } } }) {
  return { db: ctx.services.db, publicUrl: ctx.services.config.publicUrl };
}

import { ZCreateExportRequest, ZCreateExportResponse, ZExport, ZExportPage, ZExportRef, ZListExportsRequest } from '@svc/contracts/exports';
import { createExport, EXPORT_ACCESS, EXPORTS_ACCESS, getExport, listExports } from '../../modules/exports/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure } from '../procedures.ts';

const tags = ['exports'];

/**
 * Exports (docs/api.md "Exports"). Every route needs `exports.create` (and, for a person, org_admin); the
 * download is a plain Express route (download.ts): a procedure cannot stream.
 */
export const exportsRouter = router({
  create: controlProcedure
    .meta({
      access: EXPORTS_ACCESS,
      openapi: {
        method: 'POST',
        path: '/export/all',
        tags,
        summary: 'Snapshot everything the organization owns, as json or csv; 202: poll GET /v1/exports/{id}, then download',
      },
      successStatus: 202,
    })
    .input(ZCreateExportRequest)
    .use(resolveAccess)
    .output(ZCreateExportResponse)
    .mutation(({ ctx, input }) => createExport(ctx.services.db, ctx.access, ctx.request, input)),
  list: controlProcedure
    .meta({
      access: EXPORTS_ACCESS,
      openapi: { method: 'GET', path: '/exports', tags, summary: "List an organization's exports, newest first" },
    })
    .input(ZListExportsRequest)
    .use(resolveAccess)
    .output(ZExportPage)
    .query(({ ctx, input }) => listExports(ctx.services.db, ctx.access, input)),
  get: controlProcedure
    .meta({
      access: EXPORT_ACCESS,
      openapi: {
        method: 'GET',
        path: '/exports/{id}',
        tags,
        summary: 'Read an export: format, status, counts and times (never its content)',
      },
    })
    .input(ZExportRef)
    .use(resolveAccess)
    .output(ZExport)
    .query(({ ctx, input }) => getExport(ctx.services.db, ctx.access, input)),
});

import { ZCreateExportRequest, ZCreateExportResponse, ZExport, ZExportPage, ZExportRef, ZListExportsRequest } from '@svc/contracts/exports';
import { router } from '../../trpc/init.ts';
import { controlProcedure } from '../../trpc/procedures.ts';
import { createExport, getExport, listExports } from './service.ts';

const tags = ['exports'];

/**
 * Exports (docs/api.md "Exports"). Every route needs `exports.create` (and, for a person, org_admin); the
 * download is a plain Express route (download.ts): a procedure cannot stream.
 */
export const exportsRouter = router({
  create: controlProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/export/all',
        tags,
        summary: 'Snapshot everything the organization owns, as json or csv; 202: poll GET /v1/exports/{id}, then download',
      },
      successStatus: 202,
    })
    .input(ZCreateExportRequest)
    .output(ZCreateExportResponse)
    .mutation(({ ctx, input }) => createExport(ctx.services.db, ctx.principal, ctx.request, input)),
  list: controlProcedure
    .meta({ openapi: { method: 'GET', path: '/exports', tags, summary: "List an organization's exports, newest first" } })
    .input(ZListExportsRequest)
    .output(ZExportPage)
    .query(({ ctx, input }) => listExports(ctx.services.db, ctx.principal, input)),
  get: controlProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/exports/{id}',
        tags,
        summary: 'Read an export: format, status, counts and times (never its content)',
      },
    })
    .input(ZExportRef)
    .output(ZExport)
    .query(({ ctx, input }) => getExport(ctx.services.db, ctx.principal, input)),
});

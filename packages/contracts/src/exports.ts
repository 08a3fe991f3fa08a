import { z } from 'zod';
import { ZListQuery, ZPage, ZSlug } from './lists.ts';

/** `exp_` + 20 base62. Anything else is a 400, never a lookup. */
export const ZExportId = z.string().regex(/^exp_[0-9A-Za-z]{20}$/, 'expected an export id (exp_...)');

/** How a snapshot downloads by default; `?format=` on the download asks for the other. */
export const ZExportFormat = z.enum(['json', 'csv']).meta({ id: 'ExportFormat' });
export type TExportFormat = z.infer<typeof ZExportFormat>;

/** pending (queued) -> running -> completed, or failed (with a safe `error`). */
export const ZExportStatus = z.enum(['pending', 'running', 'completed', 'failed']).meta({ id: 'ExportStatus' });
export type TExportStatus = z.infer<typeof ZExportStatus>;

/**
 * The sanitized export record (docs/architecture.md section 7): never the snapshot itself (that is the download),
 * never who asked for it beyond the audit log, never an internal error text.
 */
export const ZExport = z
  .object({
    id: z.string(),
    format: ZExportFormat,
    status: ZExportStatus,
    /** Rows per resource (`members`, `usageEvents`, ...), once completed; `{}` before. */
    counts: z.record(z.string(), z.number().int()),
    /** The instant the snapshot describes (set when the build runs; the request time before). */
    asOf: z.string(),
    createdAt: z.string(),
    startedAt: z.string().nullable(),
    completedAt: z.string().nullable(),
    /** Why a failed export failed, in safe words. */
    error: z.string().nullable(),
  })
  .meta({ id: 'Export' });
export type TExport = z.infer<typeof ZExport>;

/** POST /v1/export/all. */
export const ZCreateExportRequest = z.object({
  organization_slug: ZSlug.optional(),
  format: ZExportFormat,
});
export type TCreateExportRequest = z.infer<typeof ZCreateExportRequest>;

/** 202 `{ export: { id, format, status } }` (docs/api.md). */
export const ZCreateExportResponse = z
  .object({ export: z.object({ id: z.string(), format: ZExportFormat, status: ZExportStatus }) })
  .meta({ id: 'CreatedExport' });
export type TCreateExportResponse = z.infer<typeof ZCreateExportResponse>;

export const ZExportRef = z.object({ id: ZExportId, organization_slug: ZSlug.optional() });
export type TExportRef = z.infer<typeof ZExportRef>;

export const ZListExportsRequest = ZListQuery.extend({ organization_slug: ZSlug.optional() });
export type TListExportsRequest = z.infer<typeof ZListExportsRequest>;
export const ZExportPage = ZPage(ZExport).meta({ id: 'ExportPage' });
export type TExportPage = z.infer<typeof ZExportPage>;

/** GET /v1/exports/{id}/download query: `format` asks for the other serialization. */
export const ZExportDownloadQuery = z.object({
  format: ZExportFormat.optional(),
  organization_slug: ZSlug.optional(),
});
export type TExportDownloadQuery = z.infer<typeof ZExportDownloadQuery>;

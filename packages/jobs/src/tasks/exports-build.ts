import { newId } from '@svc/contracts/ids';
import { ZTaskPayloads } from '@svc/db/jobs';
import { insertAuditLog } from '@svc/db/queries/audit-logs';
import { completeExportBuild, type ExportRecordRow, failExportBuild, lockExportForBuild, startExportBuild } from '@svc/db/queries/exports';
import { recordEvent } from '@svc/db/queries/webhook-events';
import type { JobHelpers } from 'graphile-worker';
import type { JobContext } from '../context.ts';

/** Attempts before an export is marked failed (Graphile's backoff: ~3 s, 7 s, 20 s, 55 s). */
export const EXPORT_BUILD_MAX_ATTEMPTS = 5;

/** What a failed export says: nothing of the cause (that is in the worker's log). */
export const EXPORT_BUILD_FAILED_MESSAGE = 'the export could not be built; create a new export';

/**
 * `exports:build`: captures the organization's small resources into the export record, counts
 * every resource as of the snapshot's instant (usage events included: they are streamed from
 * their table at download time), marks it completed and emits `export.completed`, all in one
 * REPEATABLE READ transaction: the export is completed, audited and announced together, or not
 * at all. The row owns the state, so a re-run (Graphile is at-least-once) of a completed export
 * does nothing, and two runs at once complete it once (the row is locked).
 *
 * A run that throws is retried; the last attempt marks the export failed with a safe message.
 */
export async function buildExport(payload: unknown, ctx: JobContext, helpers: JobHelpers): Promise<void> {
  const { exportId, tenantId } = ZTaskPayloads['exports:build'].parse(payload ?? {});
  const ref = { tenantId, id: exportId };
  const started = await startExportBuild(ctx.db, ref);
  if (!started) {
    ctx.logger.info({ exportId }, 'exports:build: nothing to build (completed, failed or gone)');
    return;
  }
  try {
    const completed = await ctx.db.transaction(
      async (tx) => {
        if ((await lockExportForBuild(tx, ref)) !== 'running') {
          return undefined;
        }
        const row = await completeExportBuild(tx, ref);
        if (!row) {
          return undefined;
        }
        const data = eventData(row);
        await insertAuditLog(tx, {
          id: newId('auditLog'),
          tenantId,
          actorType: 'system',
          actorId: null,
          actorLabel: null,
          action: 'export.completed',
          targetType: 'export',
          targetId: row.id,
          summary: { format: row.format, asOf: data.asOf, counts: row.counts },
        });
        await recordEvent(tx, { tenantId, type: 'export.completed', data });
        return row;
      },
      { isolationLevel: 'repeatable read' },
    );
    if (completed) {
      ctx.logger.info({ exportId, counts: completed.counts }, 'exports:build: completed');
    }
  } catch (error) {
    const last = helpers.job.attempts >= helpers.job.max_attempts;
    ctx.logger.error({ err: error, exportId, attempt: helpers.job.attempts, last }, 'exports:build: the build failed');
    if (!last) {
      throw error;
    }
    await ctx.db.transaction(async (tx) => {
      const failed = await failExportBuild(tx, { ...ref, error: EXPORT_BUILD_FAILED_MESSAGE });
      if (failed) {
        await insertAuditLog(tx, {
          id: newId('auditLog'),
          tenantId,
          actorType: 'system',
          actorId: null,
          actorLabel: null,
          action: 'export.failed',
          targetType: 'export',
          targetId: failed.id,
          summary: { format: failed.format, attempts: helpers.job.attempts },
        });
      }
    });
  }
}

/** The `data` of an export.completed webhook: ids, format, instant and counts; nothing else. */
function eventData(row: ExportRecordRow) {
  return {
    object: 'export',
    id: row.id,
    organizationId: row.tenantId,
    format: row.format,
    status: row.status,
    asOf: row.asOf.toISOString(),
    counts: row.counts,
    actor: { type: 'system', id: null },
  };
}

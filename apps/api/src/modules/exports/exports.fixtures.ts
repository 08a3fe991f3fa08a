import { newId } from '@svc/contracts/ids';
import type { Db } from '@svc/db/client';
import { completeExportBuild, insertExport, lockExportForBuild, startExportBuild } from '@svc/db/queries/exports';

// Test fixtures for the exports module: an export built through the same queries the
// exports:build task runs, without a worker.

/** A completed export of `tenantId` (its snapshot captured now). */
export async function seedCompletedExport(db: Db, opts: { tenantId: string; format?: 'json' | 'csv' }): Promise<string> {
  const ref = { tenantId: opts.tenantId, id: newId('export') };
  await insertExport(db, { ...ref, format: opts.format ?? 'json', requestedBy: null });
  await startExportBuild(db, ref);
  await db.transaction(
    async (tx) => {
      await lockExportForBuild(tx, ref);
      if (!(await completeExportBuild(tx, ref))) {
        throw new Error('the export did not complete');
      }
    },
    { isolationLevel: 'repeatable read' },
  );
  return ref.id;
}

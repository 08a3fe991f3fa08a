import { newId } from '@svc/contracts/ids';
import { ZTaskPayloads } from '@svc/db/jobs';
import { insertAuditLog } from '@svc/db/queries/audit-logs';
import { type DomainRow, findDomain, listVerifiedDomainsAfter, recordDomainCheck } from '@svc/db/queries/domains';
import { recordEvent } from '@svc/db/queries/webhook-events';
import type { JobContext } from '../context.ts';
import { checkDomainRecord, DEFAULT_DNS_SETTINGS } from '../domains/dns-check.ts';

/** Domains read per batch, and looked up at once within it. */
const BATCH = 20;

/**
 * `domains:recheck` (daily, crontab): asks DNS again for every verified domain's TXT record
 * (docs/enterprise.md "Domains"). Found: the check time is recorded. Gone (no record, or one
 * with another token): the domain becomes pending, with a `domain.unverified` audit entry and
 * event in the same transaction, by svc (a system actor). A resolver that times out or fails
 * proves nothing either way: the domain stays verified and the failure is recorded, so an outage
 * of the resolver cannot unverify every domain at once. Idempotent: a re-run checks again and
 * unverifies only what is still verified.
 */
export async function recheckDomains(payload: unknown, ctx: JobContext): Promise<void> {
  ZTaskPayloads['domains:recheck'].parse(payload ?? {});
  let afterId: string | null = null;
  let checked = 0;
  let unverified = 0;
  while (!ctx.stopping.aborted) {
    const batch: DomainRow[] = await listVerifiedDomainsAfter(ctx.db, { afterId, limit: BATCH });
    if (batch.length === 0) {
      break;
    }
    afterId = batch[batch.length - 1]?.id ?? null;
    const outcomes = await Promise.all(
      batch.map(async (row) => ({
        row,
        error: await checkDomainRecord(ctx.dns ?? DEFAULT_DNS_SETTINGS, { domain: row.domain, token: row.verificationToken }),
      })),
    );
    for (const { row, error } of outcomes) {
      checked++;
      if (await applyRecheck(ctx, row, error)) {
        unverified++;
      }
    }
  }
  ctx.logger.info({ checked, unverified }, 'domains:recheck: done');
}

/** Records one outcome; true when the domain was unverified by it. */
async function applyRecheck(ctx: JobContext, row: DomainRow, error: Awaited<ReturnType<typeof checkDomainRecord>>): Promise<boolean> {
  const now = new Date();
  return ctx.db.transaction(async (tx) => {
    const current = await findDomain(tx, { tenantId: row.tenantId, id: row.id, forUpdate: true });
    // Deleted, or already pending (an admin's check meanwhile): nothing to record.
    if (!current?.verifiedAt) {
      return false;
    }
    if (error === null || error === 'dns_timeout' || error === 'dns_error') {
      await recordDomainCheck(tx, { tenantId: current.tenantId, id: current.id, error, now, keepVerified: true });
      return false;
    }
    await recordDomainCheck(tx, { tenantId: current.tenantId, id: current.id, error, now });
    const summary = { domain: current.domain, reason: error, verifiedAt: current.verifiedAt.toISOString() };
    await insertAuditLog(tx, {
      id: newId('auditLog'),
      tenantId: current.tenantId,
      actorType: 'system',
      actorId: null,
      actorLabel: null,
      action: 'domain.unverified',
      targetType: 'domain',
      targetId: current.id,
      summary,
    });
    await recordEvent(tx, {
      tenantId: current.tenantId,
      type: 'domain.unverified',
      data: { ...summary, object: 'domain', id: current.id, organizationId: current.tenantId, actor: { type: 'system', id: null } },
    });
    ctx.logger.info({ domainId: current.id, tenantId: current.tenantId, reason: error }, 'domains:recheck: unverified');
    return true;
  });
}

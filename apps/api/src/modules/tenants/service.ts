import { AppError } from '@svc/contracts/errors';
import type { TTenant, TUpdateTenantRequest } from '@svc/contracts/tenants';
import type { Db } from '@svc/db/client';
import { type OrganizationRow, updateOrganization } from '@svc/db/queries/organizations';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import { authorize } from '../access/authorize.ts';
import type { Principal } from '../access/principal.ts';

export function toTenant(row: OrganizationRow): TTenant {
  if (row.kind === 'keyless') {
    throw new Error('the keyless workspace is never shown');
  }
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    kind: row.kind,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export async function getTenant(db: Db, principal: Principal, input: { id: string }): Promise<TTenant> {
  const { organization } = await authorize(db, principal, { organization: { id: input.id }, permission: 'tenant.read' });
  return toTenant(organization);
}

/** Renames an organization or changes its slug (409 when the slug is taken). */
export async function updateTenant(db: Db, principal: Principal, request: RequestMeta, input: TUpdateTenantRequest): Promise<TTenant> {
  const access = await authorize(db, principal, { organization: { id: input.id }, permission: 'tenant.update' });
  return db.transaction(async (tx) => {
    const updated = await updateOrganization(tx, { id: access.organization.id, name: input.name, slug: input.slug });
    if (!updated) {
      throw new AppError('conflict', `the slug ${input.slug} is taken`);
    }
    await recordAudit(tx, principal, request, {
      tenantId: updated.id,
      action: 'tenant.updated',
      target: { type: 'tenant', id: updated.id },
      summary: { changes: { name: input.name, slug: input.slug } },
    });
    return toTenant(updated);
  });
}

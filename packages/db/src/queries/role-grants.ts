import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';

/**
 * What the three places a role key can resolve to say about it, in one read: the product role
 * of that key (the platform's, or a built-in role's product row) and the organization's custom
 * role of that key. Which one counts is decided in one place (modules/access/role-grants.ts).
 */
export type RoleKeyRows = {
  productRole: { name: string; permissions: string[]; builtin: boolean } | null;
  customRole: { name: string; permissions: string[]; productPermissions: string[] } | null;
};

type Row = {
  pr_name: string | null;
  pr_permissions: string[] | null;
  pr_builtin: boolean | null;
  r_name: string | null;
  r_permissions: string[] | null;
  r_product_permissions: string[] | null;
};

export function roleKeyRowsOf(row: Row): RoleKeyRows {
  return {
    productRole:
      row.pr_name !== null ? { name: row.pr_name, permissions: row.pr_permissions ?? [], builtin: row.pr_builtin === true } : null,
    customRole:
      row.r_name !== null
        ? { name: row.r_name, permissions: row.r_permissions ?? [], productPermissions: row.r_product_permissions ?? [] }
        : null,
  };
}

/** The product role and the organization's custom role of `key` (each by its unique index). */
export async function findRoleKeyRows(db: DbOrTx, opts: { tenantId: string; key: string }): Promise<RoleKeyRows> {
  const rows = await db.execute<Row>(sql`
    select pr.name as pr_name, pr.permissions as pr_permissions, pr.builtin as pr_builtin,
           r.name as r_name, r.permissions as r_permissions, r.product_permissions as r_product_permissions
      from (select 1) as one
      left join product_roles pr on pr.key = ${opts.key}
      left join roles r on r.tenant_id = ${opts.tenantId} and r.key = ${opts.key}`);
  const [row] = rows as unknown as Row[];
  return row ? roleKeyRowsOf(row) : { productRole: null, customRole: null };
}

/**
 * A person's standing in an organization for the permission check (POST /v1/permissions/check):
 * the membership, the user's own status and both role rows of the membership's role key, in one
 * read by (tenant, user) and the two keys' unique indexes. Undefined when there is no membership.
 */
export type MemberStanding = RoleKeyRows & { roleKey: string; membershipStatus: string; userStatus: string };

export async function findMemberStanding(db: DbOrTx, opts: { tenantId: string; userId: string }): Promise<MemberStanding | undefined> {
  const rows = await db.execute<Row & { role_key: string; membership_status: string; user_status: string }>(sql`
    select m.role_key, m.status as membership_status, u.status as user_status,
           pr.name as pr_name, pr.permissions as pr_permissions, pr.builtin as pr_builtin,
           r.name as r_name, r.permissions as r_permissions, r.product_permissions as r_product_permissions
      from memberships m
      join users u on u.id = m.user_id
      left join product_roles pr on pr.key = m.role_key
      left join roles r on r.tenant_id = m.tenant_id and r.key = m.role_key
     where m.tenant_id = ${opts.tenantId} and m.user_id = ${opts.userId}
     limit 1`);
  const [row] = rows as unknown as (Row & { role_key: string; membership_status: string; user_status: string })[];
  if (!row) {
    return undefined;
  }
  return { ...roleKeyRowsOf(row), roleKey: row.role_key, membershipStatus: row.membership_status, userStatus: row.user_status };
}

import { sql } from 'drizzle-orm';
import { type DbOrTx, executePrepared } from '../client.ts';

/**
 * The reads of the permission check (POST /v1/permissions/check) beside a person's standing
 * (role-grants.ts findMemberStanding) and an organization's subscription terms
 * (subscriptions.ts findEntitlementTerms).
 */

/** Some API resource declares a product permission of this name (api_permissions' unique name index). */
export async function productPermissionExists(db: DbOrTx, name: string): Promise<boolean> {
  const rows = await executePrepared<{ found: boolean }>(
    db,
    sql`select exists (select 1 from api_permissions where name = ${name}) as found`,
  );
  return rows[0]?.found === true;
}

/**
 * The person has signed in to the application for the organization: one of their sessions'
 * grants to it spoke for that organization (session_applications, scope `organization`), whether
 * or not that sign-in has ended since. By the person's sessions (sessions_user_idx), then each
 * one's row for the application (the primary key): what an application of another organization
 * may ask the permission check about (modules/permission-check).
 */
export async function hasSignedInFor(
  db: DbOrTx,
  opts: { applicationId: string; userId: string; organizationId: string },
): Promise<boolean> {
  const rows = await executePrepared<{ found: boolean }>(
    db,
    sql`
    select exists (
      select 1 from sessions s
      join session_applications sa on sa.session_id = s.id and sa.application_id = ${opts.applicationId}
      where s.user_id = ${opts.userId} and sa.organization_id = ${opts.organizationId}
    ) as found`,
  );
  return rows[0]?.found === true;
}

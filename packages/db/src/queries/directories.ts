import { and, asc, eq, inArray, type SQL, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { afterCursor, type Cursor } from '../pagination.ts';
import { scimDirectories, scimGroupMembers, scimGroups, scimRequestLog, scimUsers } from '../schema/directories.ts';
import { memberships } from '../schema/identity.ts';
import { organizations } from '../schema/organizations.ts';
import { sessions } from '../schema/sessions.ts';

// An organization's SCIM directories and what they provision (docs/enterprise.md "Directory
// sync"). Every statement carries the tenant predicate, except `findDirectoryTenant` (how an id
// from a /v1 request learns its tenant, which the caller then authorizes) and
// `findDirectoryByToken` (how a SCIM request learns its directory: the id and the token's hash
// together, so one directory's token opens no other).

export type DirectoryRow = typeof scimDirectories.$inferSelect;
export type DirectoryWithCounts = DirectoryRow & { userCount: number; groupCount: number };
export type ScimUserRow = typeof scimUsers.$inferSelect;
export type ScimGroupRow = typeof scimGroups.$inferSelect;

const userCount = sql<number>`(select count(*)::int from ${scimUsers} where ${scimUsers.directoryId} = ${scimDirectories.id})`;
const groupCount = sql<number>`(select count(*)::int from ${scimGroups} where ${scimGroups.directoryId} = ${scimDirectories.id})`;

export async function findDirectoryTenant(db: DbOrTx, opts: { untrustedId: string }): Promise<string | undefined> {
  const [row] = await db
    .select({ tenantId: scimDirectories.tenantId })
    .from(scimDirectories)
    .where(eq(scimDirectories.id, opts.untrustedId))
    .limit(1);
  return row?.tenantId;
}

export async function findDirectory(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<DirectoryWithCounts | undefined> {
  const [row] = await db
    .select({ directory: scimDirectories, userCount, groupCount })
    .from(scimDirectories)
    .where(and(eq(scimDirectories.tenantId, opts.tenantId), eq(scimDirectories.id, opts.id)))
    .limit(1);
  return row ? { ...row.directory, userCount: row.userCount, groupCount: row.groupCount } : undefined;
}

/**
 * The directory a SCIM request names, if `tokenHash` is its token's: the id from the path and the
 * hash must both match, so another directory's token (of this organization or any other) finds
 * nothing. The organization must be a tenant (never the platform workspace).
 */
export async function findDirectoryByToken(
  db: DbOrTx,
  opts: { untrustedId: string; tokenHash: string },
): Promise<DirectoryRow | undefined> {
  const [row] = await db
    .select({ directory: scimDirectories })
    .from(scimDirectories)
    .innerJoin(organizations, eq(organizations.id, scimDirectories.tenantId))
    .where(and(eq(scimDirectories.id, opts.untrustedId), eq(scimDirectories.tokenHash, opts.tokenHash), eq(organizations.kind, 'tenant')))
    .limit(1);
  return row?.directory;
}

export async function listDirectories(
  db: DbOrTx,
  opts: { tenantId: string; limit: number; cursor?: Cursor },
): Promise<DirectoryWithCounts[]> {
  const rows = await db
    .select({ directory: scimDirectories, userCount, groupCount })
    .from(scimDirectories)
    .where(and(eq(scimDirectories.tenantId, opts.tenantId), afterCursor(scimDirectories.createdAt, scimDirectories.id, opts.cursor)))
    .orderBy(sql`${scimDirectories.createdAt} desc nulls last`, sql`${scimDirectories.id} desc nulls last`)
    .limit(opts.limit + 1);
  return rows.map((r) => ({ ...r.directory, userCount: r.userCount, groupCount: r.groupCount }));
}

export async function insertDirectory(db: DbOrTx, values: typeof scimDirectories.$inferInsert): Promise<DirectoryRow> {
  const [row] = await db.insert(scimDirectories).values(values).returning();
  if (!row) {
    throw new Error('directory insert returned nothing');
  }
  return row;
}

export async function updateDirectory(
  db: DbOrTx,
  opts: {
    tenantId: string;
    id: string;
    set: Partial<Pick<DirectoryRow, 'name' | 'defaultRoleKey' | 'groupRoles' | 'tokenHash' | 'tokenPrefix' | 'tokenRotatedAt'>>;
    now: Date;
  },
): Promise<DirectoryRow | undefined> {
  const [row] = await db
    .update(scimDirectories)
    .set({ ...opts.set, updatedAt: opts.now })
    .where(and(eq(scimDirectories.tenantId, opts.tenantId), eq(scimDirectories.id, opts.id)))
    .returning();
  return row;
}

export async function deleteDirectory(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<DirectoryRow | undefined> {
  const [row] = await db
    .delete(scimDirectories)
    .where(and(eq(scimDirectories.tenantId, opts.tenantId), eq(scimDirectories.id, opts.id)))
    .returning();
  return row;
}

/** How many requests the log keeps per directory. */
export const REQUEST_LOG_SIZE = 100;

/**
 * Logs one SCIM request and notes when the directory was last used; every 20th insert or so the
 * log is trimmed to its last REQUEST_LOG_SIZE rows (cheaper than a delete per request).
 */
export async function logScimRequest(
  db: DbOrTx,
  opts: { tenantId: string; directoryId: string; method: string; path: string; status: number; at: Date },
): Promise<void> {
  const [row] = await db
    .insert(scimRequestLog)
    .values({
      tenantId: opts.tenantId,
      directoryId: opts.directoryId,
      method: opts.method,
      path: opts.path,
      status: opts.status,
      at: opts.at,
    })
    .returning({ id: scimRequestLog.id });
  await db
    .update(scimDirectories)
    .set({ lastRequestAt: opts.at })
    .where(
      and(
        eq(scimDirectories.tenantId, opts.tenantId),
        eq(scimDirectories.id, opts.directoryId),
        sql`(${scimDirectories.lastRequestAt} is null or ${scimDirectories.lastRequestAt} < ${new Date(opts.at.getTime() - 10_000).toISOString()}::timestamptz)`,
      ),
    );
  if (row && row.id % 20 === 0) {
    await db.execute(sql`
      delete from ${scimRequestLog}
      where ${scimRequestLog.tenantId} = ${opts.tenantId} and ${scimRequestLog.directoryId} = ${opts.directoryId}
        and ${scimRequestLog.id} <= (
          select id from ${scimRequestLog}
          where ${scimRequestLog.tenantId} = ${opts.tenantId} and ${scimRequestLog.directoryId} = ${opts.directoryId}
          order by id desc offset ${REQUEST_LOG_SIZE} limit 1
        )`);
  }
}

export async function listScimRequests(
  db: DbOrTx,
  opts: { tenantId: string; directoryId: string },
): Promise<{ at: Date; method: string; path: string; status: number }[]> {
  return db
    .select({ at: scimRequestLog.at, method: scimRequestLog.method, path: scimRequestLog.path, status: scimRequestLog.status })
    .from(scimRequestLog)
    .where(and(eq(scimRequestLog.tenantId, opts.tenantId), eq(scimRequestLog.directoryId, opts.directoryId)))
    .orderBy(sql`${scimRequestLog.id} desc`)
    .limit(REQUEST_LOG_SIZE);
}

// --- SCIM filters -------------------------------------------------------------------------------

/** A parsed SCIM filter (RFC 7644 section 3.4.2.2), attributes already resolved to known names. */
export type ScimFilter =
  | { kind: 'and' | 'or'; items: ScimFilter[] }
  | { kind: 'not'; filter: ScimFilter }
  | { kind: 'pr'; attr: string }
  | {
      kind: 'cmp';
      attr: string;
      op: 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le';
      value: string | number | boolean | null;
    };

/** How a filterable attribute is compared: case-insensitive text, case-exact text, boolean or instant. */
type Column = { expr: SQL; type: 'ci' | 'exact' | 'boolean' | 'instant'; nullable: boolean; array?: true };

export const SCIM_USER_FILTER_COLUMNS: Record<string, Column> = {
  id: { expr: sql`${scimUsers.id}`, type: 'exact', nullable: false },
  username: { expr: sql`lower(${scimUsers.userName})`, type: 'ci', nullable: false },
  externalid: { expr: sql`${scimUsers.externalId}`, type: 'exact', nullable: true },
  displayname: { expr: sql`lower(${scimUsers.displayName})`, type: 'ci', nullable: true },
  'name.givenname': { expr: sql`lower(${scimUsers.givenName})`, type: 'ci', nullable: true },
  'name.familyname': { expr: sql`lower(${scimUsers.familyName})`, type: 'ci', nullable: true },
  'emails.value': { expr: sql`${scimUsers.email}`, type: 'ci', nullable: false },
  emails: { expr: sql`${scimUsers.email}`, type: 'ci', nullable: false },
  active: { expr: sql`${scimUsers.active}`, type: 'boolean', nullable: false },
  'meta.created': { expr: sql`${scimUsers.createdAt}`, type: 'instant', nullable: false },
  'meta.lastmodified': { expr: sql`${scimUsers.updatedAt}`, type: 'instant', nullable: false },
};

export const SCIM_GROUP_FILTER_COLUMNS: Record<string, Column> = {
  id: { expr: sql`${scimGroups.id}`, type: 'exact', nullable: false },
  displayname: { expr: sql`lower(${scimGroups.displayName})`, type: 'ci', nullable: false },
  externalid: { expr: sql`${scimGroups.externalId}`, type: 'exact', nullable: true },
  'members.value': {
    expr: sql`(select array_agg(${scimGroupMembers.scimUserId}) from ${scimGroupMembers} where ${scimGroupMembers.groupId} = ${scimGroups.id})`,
    type: 'exact',
    nullable: true,
    array: true,
  },
  'meta.created': { expr: sql`${scimGroups.createdAt}`, type: 'instant', nullable: false },
  'meta.lastmodified': { expr: sql`${scimGroups.updatedAt}`, type: 'instant', nullable: false },
};

function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

const SQL_OPS = { eq: '=', ne: '<>', gt: '>', ge: '>=', lt: '<', le: '<=' } as const;

/**
 * The SQL of a filter over `columns`; every value is a bind parameter. The parser resolved the
 * attributes, so an unknown one here is a bug (thrown). Comparisons that make no sense for a type
 * (`co` on a boolean) are false, as RFC 7644 lets a provider answer them with nothing.
 */
export function scimFilterSql(filter: ScimFilter, columns: Record<string, Column>): SQL {
  switch (filter.kind) {
    case 'and':
    case 'or':
      return sql`(${sql.join(
        filter.items.map((f) => scimFilterSql(f, columns)),
        sql.raw(filter.kind === 'and' ? ' and ' : ' or '),
      )})`;
    case 'not':
      return sql`(not coalesce(${scimFilterSql(filter.filter, columns)}, false))`;
    case 'pr': {
      const column = columnOf(columns, filter.attr);
      return sql`(${column.expr} is not null)`;
    }
    case 'cmp': {
      const column = columnOf(columns, filter.attr);
      return compare(column, filter.op, filter.value);
    }
  }
}

function columnOf(columns: Record<string, Column>, attr: string): Column {
  const column = columns[attr];
  if (!column) {
    throw new Error(`unresolved SCIM attribute ${attr}`);
  }
  return column;
}

function compare(column: Column, op: Extract<ScimFilter, { kind: 'cmp' }>['op'], value: string | number | boolean | null): SQL {
  if (value === null) {
    return op === 'eq' ? sql`(${column.expr} is null)` : op === 'ne' ? sql`(${column.expr} is not null)` : sql`false`;
  }
  if (column.type === 'boolean') {
    if (typeof value !== 'boolean' || (op !== 'eq' && op !== 'ne')) {
      return sql`false`;
    }
    return op === 'eq' ? sql`(${column.expr} = ${value})` : sql`(${column.expr} <> ${value})`;
  }
  const text = String(value);
  if (column.type === 'instant') {
    const at = new Date(text);
    if (Number.isNaN(at.getTime()) || !(op in SQL_OPS)) {
      return sql`false`;
    }
    return sql`(${column.expr} ${sql.raw(SQL_OPS[op as keyof typeof SQL_OPS])} ${at.toISOString()}::timestamptz)`;
  }
  const operand = column.type === 'ci' ? text.toLowerCase() : text;
  // members.value is an array: membership tests only.
  if (column.array) {
    return op === 'eq' ? sql`(${operand} = any(coalesce(${column.expr}, '{}')))` : sql`false`;
  }
  switch (op) {
    case 'co':
      return sql`(${column.expr} like ${`%${escapeLike(operand)}%`})`;
    case 'sw':
      return sql`(${column.expr} like ${`${escapeLike(operand)}%`})`;
    case 'ew':
      return sql`(${column.expr} like ${`%${escapeLike(operand)}`})`;
    default:
      return sql`(${column.expr} ${sql.raw(SQL_OPS[op])} ${operand})`;
  }
}

// --- SCIM users ---------------------------------------------------------------------------------

/** A SCIM user with the standing of its membership (null: the membership is gone). */
export type ScimUserView = ScimUserRow & { membershipStatus: 'invited' | 'active' | 'suspended' | null; roleKey: string | null };

const scimUserView = {
  user: scimUsers,
  membershipStatus: memberships.status,
  roleKey: memberships.roleKey,
};

function toView(row: { user: ScimUserRow; membershipStatus: ScimUserView['membershipStatus']; roleKey: string | null }): ScimUserView {
  return { ...row.user, membershipStatus: row.membershipStatus, roleKey: row.roleKey };
}

function scimUserQuery(db: DbOrTx) {
  return db
    .select(scimUserView)
    .from(scimUsers)
    .leftJoin(memberships, and(eq(memberships.tenantId, scimUsers.tenantId), eq(memberships.userId, scimUsers.userId)));
}

export async function findScimUser(
  db: DbOrTx,
  opts: { tenantId: string; directoryId: string; id: string; forUpdate?: boolean },
): Promise<ScimUserView | undefined> {
  const query = scimUserQuery(db)
    .where(and(eq(scimUsers.tenantId, opts.tenantId), eq(scimUsers.directoryId, opts.directoryId), eq(scimUsers.id, opts.id)))
    .limit(1);
  const [row] = opts.forUpdate ? await query.for('update', { of: scimUsers }) : await query;
  return row ? toView(row) : undefined;
}

/** A page of a directory's users matching `where` (a scimFilterSql), oldest first, and how many match in all. */
export async function listScimUsers(
  db: DbOrTx,
  opts: { tenantId: string; directoryId: string; where?: SQL; offset: number; limit: number },
): Promise<{ total: number; rows: ScimUserView[] }> {
  const where = and(eq(scimUsers.tenantId, opts.tenantId), eq(scimUsers.directoryId, opts.directoryId), opts.where);
  const [rows, [count]] = await Promise.all([
    opts.limit === 0
      ? Promise.resolve([])
      : scimUserQuery(db).where(where).orderBy(asc(scimUsers.createdAt), asc(scimUsers.id)).offset(opts.offset).limit(opts.limit),
    db.select({ n: sql<number>`count(*)::int` }).from(scimUsers).where(where),
  ]);
  return { total: count?.n ?? 0, rows: rows.map(toView) };
}

/** Which of `ids` are users of the directory (group members must be). */
export async function existingScimUserIds(
  db: DbOrTx,
  opts: { tenantId: string; directoryId: string; ids: string[] },
): Promise<Set<string>> {
  if (opts.ids.length === 0) {
    return new Set();
  }
  const rows = await db
    .select({ id: scimUsers.id })
    .from(scimUsers)
    .where(and(eq(scimUsers.tenantId, opts.tenantId), eq(scimUsers.directoryId, opts.directoryId), inArray(scimUsers.id, opts.ids)));
  return new Set(rows.map((r) => r.id));
}

/** The SCIM user of `userId` in the organization, whichever directory holds it. */
export async function findScimUserOfUser(db: DbOrTx, opts: { tenantId: string; userId: string }): Promise<ScimUserRow | undefined> {
  const [row] = await db
    .select()
    .from(scimUsers)
    .where(and(eq(scimUsers.tenantId, opts.tenantId), eq(scimUsers.userId, opts.userId)))
    .limit(1);
  return row;
}

/** Inserts a SCIM user; undefined when the directory has the userName or externalId already (the unique indexes decide). */
export async function insertScimUser(db: DbOrTx, values: typeof scimUsers.$inferInsert): Promise<ScimUserRow | undefined> {
  const [row] = await db.insert(scimUsers).values(values).onConflictDoNothing().returning();
  return row;
}

export async function updateScimUser(
  db: DbOrTx,
  opts: {
    tenantId: string;
    id: string;
    set: Partial<Pick<ScimUserRow, 'userName' | 'externalId' | 'displayName' | 'givenName' | 'familyName' | 'email' | 'active'>>;
    now: Date;
  },
): Promise<ScimUserRow | undefined> {
  const [row] = await db
    .update(scimUsers)
    .set({ ...opts.set, updatedAt: opts.now, version: sql`${scimUsers.version} + 1` })
    .where(and(eq(scimUsers.tenantId, opts.tenantId), eq(scimUsers.id, opts.id)))
    .returning();
  return row;
}

export async function deleteScimUser(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<ScimUserRow | undefined> {
  const [row] = await db
    .delete(scimUsers)
    .where(and(eq(scimUsers.tenantId, opts.tenantId), eq(scimUsers.id, opts.id)))
    .returning();
  return row;
}

/** The display names of the directory's groups that a SCIM user is in. */
export async function groupNamesOfScimUser(db: DbOrTx, opts: { tenantId: string; scimUserId: string }): Promise<string[]> {
  const rows = await db
    .select({ displayName: scimGroups.displayName })
    .from(scimGroupMembers)
    .innerJoin(scimGroups, eq(scimGroups.id, scimGroupMembers.groupId))
    .where(and(eq(scimGroupMembers.tenantId, opts.tenantId), eq(scimGroupMembers.scimUserId, opts.scimUserId)));
  return rows.map((r) => r.displayName);
}

/** The groups (id, name) of SCIM users, for their `groups` attribute. */
export async function groupsOfScimUsers(
  db: DbOrTx,
  opts: { tenantId: string; scimUserIds: string[] },
): Promise<Map<string, { id: string; displayName: string }[]>> {
  const out = new Map<string, { id: string; displayName: string }[]>();
  if (opts.scimUserIds.length === 0) {
    return out;
  }
  const rows = await db
    .select({ scimUserId: scimGroupMembers.scimUserId, id: scimGroups.id, displayName: scimGroups.displayName })
    .from(scimGroupMembers)
    .innerJoin(scimGroups, eq(scimGroups.id, scimGroupMembers.groupId))
    .where(and(eq(scimGroupMembers.tenantId, opts.tenantId), inArray(scimGroupMembers.scimUserId, opts.scimUserIds)));
  for (const r of rows) {
    const list = out.get(r.scimUserId) ?? [];
    list.push({ id: r.id, displayName: r.displayName });
    out.set(r.scimUserId, list);
  }
  return out;
}

/** Whether the person is a platform admin: a member of the platform workspace, or ever signed in as one. */
export async function isPlatformAdminUser(db: DbOrTx, userId: string): Promise<boolean> {
  const rows = await db.execute<{ platform: boolean }>(sql`
    select exists (
      select 1 from ${memberships} m join ${organizations} o on o.id = m.tenant_id
      where m.user_id = ${userId} and o.kind = 'platform'
    ) or exists (
      select 1 from ${sessions} s where s.user_id = ${userId} and s.is_platform_admin
    ) as platform`);
  return rows[0]?.platform === true;
}

// --- SCIM groups --------------------------------------------------------------------------------

export async function findScimGroup(
  db: DbOrTx,
  opts: { tenantId: string; directoryId: string; id: string; forUpdate?: boolean },
): Promise<ScimGroupRow | undefined> {
  const query = db
    .select()
    .from(scimGroups)
    .where(and(eq(scimGroups.tenantId, opts.tenantId), eq(scimGroups.directoryId, opts.directoryId), eq(scimGroups.id, opts.id)))
    .limit(1);
  const [row] = opts.forUpdate ? await query.for('update') : await query;
  return row;
}

export async function listScimGroups(
  db: DbOrTx,
  opts: { tenantId: string; directoryId: string; where?: SQL; offset: number; limit: number },
): Promise<{ total: number; rows: ScimGroupRow[] }> {
  const where = and(eq(scimGroups.tenantId, opts.tenantId), eq(scimGroups.directoryId, opts.directoryId), opts.where);
  const [rows, [count]] = await Promise.all([
    opts.limit === 0
      ? Promise.resolve([])
      : db
          .select()
          .from(scimGroups)
          .where(where)
          .orderBy(asc(scimGroups.createdAt), asc(scimGroups.id))
          .offset(opts.offset)
          .limit(opts.limit),
    db.select({ n: sql<number>`count(*)::int` }).from(scimGroups).where(where),
  ]);
  return { total: count?.n ?? 0, rows };
}

export async function insertScimGroup(db: DbOrTx, values: typeof scimGroups.$inferInsert): Promise<ScimGroupRow | undefined> {
  const [row] = await db.insert(scimGroups).values(values).onConflictDoNothing().returning();
  return row;
}

export async function updateScimGroup(
  db: DbOrTx,
  opts: { tenantId: string; id: string; set: Partial<Pick<ScimGroupRow, 'displayName' | 'externalId'>>; now: Date },
): Promise<ScimGroupRow | undefined> {
  const [row] = await db
    .update(scimGroups)
    .set({ ...opts.set, updatedAt: opts.now, version: sql`${scimGroups.version} + 1` })
    .where(and(eq(scimGroups.tenantId, opts.tenantId), eq(scimGroups.id, opts.id)))
    .returning();
  return row;
}

export async function deleteScimGroup(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<ScimGroupRow | undefined> {
  const [row] = await db
    .delete(scimGroups)
    .where(and(eq(scimGroups.tenantId, opts.tenantId), eq(scimGroups.id, opts.id)))
    .returning();
  return row;
}

/** The members (SCIM user id, userName) of groups. */
export async function membersOfScimGroups(
  db: DbOrTx,
  opts: { tenantId: string; groupIds: string[] },
): Promise<Map<string, { id: string; userName: string }[]>> {
  const out = new Map<string, { id: string; userName: string }[]>();
  if (opts.groupIds.length === 0) {
    return out;
  }
  const rows = await db
    .select({ groupId: scimGroupMembers.groupId, id: scimUsers.id, userName: scimUsers.userName })
    .from(scimGroupMembers)
    .innerJoin(scimUsers, eq(scimUsers.id, scimGroupMembers.scimUserId))
    .where(and(eq(scimGroupMembers.tenantId, opts.tenantId), inArray(scimGroupMembers.groupId, opts.groupIds)));
  for (const r of rows) {
    const list = out.get(r.groupId) ?? [];
    list.push({ id: r.id, userName: r.userName });
    out.set(r.groupId, list);
  }
  return out;
}

export async function addScimGroupMembers(
  db: DbOrTx,
  opts: { tenantId: string; groupId: string; scimUserIds: string[] },
): Promise<string[]> {
  if (opts.scimUserIds.length === 0) {
    return [];
  }
  const rows = await db
    .insert(scimGroupMembers)
    .values(opts.scimUserIds.map((scimUserId) => ({ tenantId: opts.tenantId, groupId: opts.groupId, scimUserId })))
    .onConflictDoNothing()
    .returning({ id: scimGroupMembers.scimUserId });
  return rows.map((r) => r.id);
}

/** Removes members (all of them when `scimUserIds` is undefined); returns who left. */
export async function removeScimGroupMembers(
  db: DbOrTx,
  opts: { tenantId: string; groupId: string; scimUserIds?: string[] },
): Promise<string[]> {
  if (opts.scimUserIds?.length === 0) {
    return [];
  }
  const rows = await db
    .delete(scimGroupMembers)
    .where(
      and(
        eq(scimGroupMembers.tenantId, opts.tenantId),
        eq(scimGroupMembers.groupId, opts.groupId),
        opts.scimUserIds ? inArray(scimGroupMembers.scimUserId, opts.scimUserIds) : undefined,
      ),
    )
    .returning({ id: scimGroupMembers.scimUserId });
  return rows.map((r) => r.id);
}

/** Every SCIM user of a directory with the groups they are in: a mapping change recomputes each one's role. */
export async function scimUsersOfDirectory(db: DbOrTx, opts: { tenantId: string; directoryId: string }): Promise<ScimUserRow[]> {
  return db
    .select()
    .from(scimUsers)
    .where(and(eq(scimUsers.tenantId, opts.tenantId), eq(scimUsers.directoryId, opts.directoryId)));
}

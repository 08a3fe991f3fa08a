import { createHash } from 'node:crypto';
import { scimBaseUrl } from '@svc/contracts/directories';
import { emailDomainOf } from '@svc/contracts/domains';
import { AppError } from '@svc/contracts/errors';
import { newId } from '@svc/contracts/ids';
import { isSystemRole } from '@svc/contracts/permissions';
import type { Db, DbOrTx } from '@svc/db/client';
import {
  addScimGroupMembers,
  type DirectoryRow,
  deleteScimGroup,
  deleteScimUser,
  existingScimUserIds,
  findDirectoryByToken,
  findScimGroup,
  findScimUser,
  groupNamesOfScimUser,
  groupsOfScimUsers,
  insertScimGroup,
  insertScimUser,
  isPlatformAdminUser,
  listScimGroups,
  listScimUsers,
  logScimRequest,
  membersOfScimGroups,
  removeScimGroupMembers,
  SCIM_GROUP_FILTER_COLUMNS,
  SCIM_USER_FILTER_COLUMNS,
  type ScimUserRow,
  scimFilterSql,
  scimUsersOfDirectory,
  updateScimGroup,
  updateScimUser,
} from '@svc/db/queries/directories';
import { findVerifiedDomain } from '@svc/db/queries/domains';
import { findUnlinkedUserByEmail, insertUser } from '@svc/db/queries/identity';
import {
  addOrgMember,
  countOtherActiveOrgAdmins,
  declineInvitedMembership,
  findOnlyVerifiedUserByEmail,
  findOrgUser,
  lockEmail,
  lockOrgAdmins,
  moveSessionsOfMemberOut,
  removeOrgMember,
  setOrgMemberStatus,
  updateOrgMemberRole,
} from '@svc/db/queries/users';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import { grantsOfRole } from '../access/role-grants.ts';
import { revokeKeysOfCreator } from '../api-keys/service.ts';
import { endSessions } from '../session-store/end.ts';
import { claimSeat } from '../subscriptions/enforce.ts';
import { ScimError } from './errors.ts';
import { parseFilter, ScimFilterError } from './filter.ts';
import {
  type GroupInput,
  groupFromBody,
  groupResource,
  LIST_SCHEMA,
  type PatchOperation,
  patchGroup,
  patchOperations,
  patchUser,
  provisionedEmail,
  type UserInput,
  userFromBody,
  userInputOf,
  userResource,
} from './resources.ts';

// The SCIM 2.0 service of a directory (docs/enterprise.md "Directory sync"). The caller is the
// directory itself, authenticated by its bearer token: everything here acts in the directory's
// organization only (every statement carries its tenant and directory), never on a platform
// admin, and each change commits with its audit entry and event.

export type ScimDeps = { db: Db; publicUrl: string };
export type ScimCaller = { directory: DirectoryRow; request: RequestMeta };

const BEARER = /^Bearer\s+(scim_[0-9A-Za-z]{40})\s*$/;

/**
 * The directory a SCIM request is for: the id in its path and the bearer token must belong
 * together. Anything else (no token, a malformed one, another directory's) is the same 401.
 */
export async function authenticateDirectory(db: DbOrTx, untrustedId: string, authorization: string | undefined): Promise<DirectoryRow> {
  const token = BEARER.exec(authorization ?? '')?.[1];
  const directory =
    token && /^dir_[0-9A-Za-z]{20}$/.test(untrustedId)
      ? await findDirectoryByToken(db, { untrustedId, tokenHash: createHash('sha256').update(token).digest('hex') })
      : undefined;
  if (!directory) {
    throw new ScimError(401, "the bearer token is not this directory's: copy the SCIM base URL and token from the console");
  }
  return directory;
}

/** Notes one request in the directory's log (method, path, status; never a body or header). */
export async function logRequest(db: Db, directory: DirectoryRow, entry: { method: string; path: string; status: number }): Promise<void> {
  await logScimRequest(db, {
    tenantId: directory.tenantId,
    directoryId: directory.id,
    ...entry,
    path: entry.path.slice(0, 300),
    at: new Date(),
  });
}

const baseOf = (deps: ScimDeps, directory: DirectoryRow) => scimBaseUrl(deps.publicUrl, directory.id);

const USER_FILTER_ATTRIBUTES: ReadonlySet<string> = new Set(Object.keys(SCIM_USER_FILTER_COLUMNS));
const GROUP_FILTER_ATTRIBUTES: ReadonlySet<string> = new Set(Object.keys(SCIM_GROUP_FILTER_COLUMNS));

/** Page size when the client names none, and the most one page holds (ServiceProviderConfig's filter.maxResults). */
export const DEFAULT_COUNT = 100;
export const MAX_COUNT = 200;

export type ListQuery = { filter?: string; startIndex?: string | number; count?: string | number; excludedAttributes?: string };

function pageOf(query: ListQuery): { offset: number; limit: number; startIndex: number } {
  const startRaw = query.startIndex === undefined ? 1 : Number(query.startIndex);
  const countRaw = query.count === undefined ? DEFAULT_COUNT : Number(query.count);
  if (!Number.isFinite(startRaw) || !Number.isFinite(countRaw)) {
    throw new ScimError(400, 'startIndex and count are integers', 'invalidValue');
  }
  // RFC 7644 section 3.4.2.4: a startIndex below 1 is read as 1, a negative count as 0.
  const startIndex = Math.max(1, Math.min(Math.trunc(startRaw), 1_000_000_000));
  const limit = Math.max(0, Math.min(Math.trunc(countRaw), MAX_COUNT));
  return { offset: startIndex - 1, limit, startIndex };
}

function filterOf(raw: string | undefined, known: ReadonlySet<string>) {
  if (raw === undefined || raw.trim() === '') {
    return undefined;
  }
  try {
    return parseFilter(raw, known);
  } catch (error) {
    if (error instanceof ScimFilterError) {
      throw new ScimError(400, error.message, error.scimType);
    }
    throw error;
  }
}

function excludesGroupsOrMembers(query: ListQuery, attribute: string): boolean {
  return (query.excludedAttributes ?? '')
    .split(',')
    .map((a) => a.trim().toLowerCase())
    .includes(attribute);
}

export async function listUsers(deps: ScimDeps, caller: ScimCaller, query: ListQuery): Promise<Record<string, unknown>> {
  const { directory } = caller;
  const filter = filterOf(query.filter, USER_FILTER_ATTRIBUTES);
  const page = pageOf(query);
  const { total, rows } = await listScimUsers(deps.db, {
    tenantId: directory.tenantId,
    directoryId: directory.id,
    where: filter ? scimFilterSql(filter, SCIM_USER_FILTER_COLUMNS) : undefined,
    offset: page.offset,
    limit: page.limit,
  });
  const groups = excludesGroupsOrMembers(query, 'groups')
    ? new Map()
    : await groupsOfScimUsers(deps.db, { tenantId: directory.tenantId, scimUserIds: rows.map((r) => r.id) });
  const base = baseOf(deps, directory);
  return {
    schemas: [LIST_SCHEMA],
    totalResults: total,
    startIndex: page.startIndex,
    itemsPerPage: rows.length,
    Resources: rows.map((r) => userResource(base, r, groups.get(r.id) ?? [])),
  };
}

const USER_NOT_FOUND = 'no such User in this directory';
const GROUP_NOT_FOUND = 'no such Group in this directory';

async function userAnswer(deps: ScimDeps, db: DbOrTx, directory: DirectoryRow, id: string): Promise<Record<string, unknown>> {
  const row = await findScimUser(db, { tenantId: directory.tenantId, directoryId: directory.id, id });
  if (!row) {
    throw new ScimError(404, USER_NOT_FOUND);
  }
  const groups = await groupsOfScimUsers(db, { tenantId: directory.tenantId, scimUserIds: [id] });
  return userResource(baseOf(deps, directory), row, groups.get(id) ?? []);
}

export async function getUser(deps: ScimDeps, caller: ScimCaller, id: string): Promise<Record<string, unknown>> {
  return userAnswer(deps, deps.db, caller.directory, id);
}

/** A role key the organization has: a system role or one of its custom (or product) roles. */
async function roleExists(db: DbOrTx, tenantId: string, roleKey: string): Promise<boolean> {
  return isSystemRole(roleKey) || (await grantsOfRole(db, tenantId, roleKey)) !== undefined;
}

/** The role the directory gives someone in `groups`: the first mapped group's, else the default (org_member if that role is gone). */
async function roleFor(db: DbOrTx, directory: DirectoryRow, groups: string[]): Promise<string> {
  const names = new Set(groups.map((g) => g.toLowerCase()));
  for (const mapping of directory.groupRoles) {
    if (names.has(mapping.group.toLowerCase()) && (await roleExists(db, directory.tenantId, mapping.roleKey))) {
      return mapping.roleKey;
    }
  }
  return (await roleExists(db, directory.tenantId, directory.defaultRoleKey)) ? directory.defaultRoleKey : 'org_member';
}

/** The person of a new SCIM user: the pre-provisioned user of the email, else the one who signed in with it verified, else a new pre-provisioned one. */
async function personFor(tx: DbOrTx, email: string, name: string) {
  return (
    (await findUnlinkedUserByEmail(tx, email)) ??
    (await findOnlyVerifiedUserByEmail(tx, email)) ??
    (await insertUser(tx, { id: newId('user'), engineSubject: null, email, name, emailVerified: false }))
  );
}

const displayNameOf = (user: UserInput) =>
  user.displayName ?? ([user.givenName, user.familyName].filter(Boolean).join(' ') || user.userName);

type Standing = 'changed' | 'unchanged' | 'platform_admin' | 'invited' | 'no_membership' | 'last_org_admin';

const SEAT_REFUSALS: ReadonlySet<string> = new Set(['subscription_limit_exceeded', 'subscription_inactive']);

/**
 * POST /Users: the person (matched by email, else created), their membership, the SCIM user. The
 * membership is active when the email is at a domain this organization has verified (its
 * directory vouching for its own domain is the consent, docs/enterprise.md "Directory sync"),
 * else invited (the person accepts, as for any organization that adds them). A platform admin is
 * only ever invited. A membership the person already has keeps its standing.
 */
export async function createUser(deps: ScimDeps, caller: ScimCaller, body: unknown): Promise<Record<string, unknown>> {
  const { directory, request } = caller;
  const input = userFromBody(body);
  const email = provisionedEmail(input);
  const tenantId = directory.tenantId;
  try {
    const created = await deps.db.transaction(async (tx) => {
      await lockEmail(tx, email);
      const person = await personFor(tx, email, displayNameOf(input));
      const id = newId('directoryUser');
      const row = await insertScimUser(tx, {
        id,
        tenantId,
        directoryId: directory.id,
        userId: person.id,
        userName: input.userName,
        externalId: input.externalId,
        displayName: input.displayName,
        givenName: input.givenName,
        familyName: input.familyName,
        email,
        active: input.active,
      });
      if (!row) {
        throw new ScimError(409, 'a User with this userName, externalId or email exists already', 'uniqueness');
      }
      const existing = await findOrgUser(tx, { tenantId, userId: person.id });
      if (existing) {
        await applyStanding(tx, caller, row, { active: input.active, roleKey: await roleFor(tx, directory, []) });
      } else {
        const platformAdmin = await isPlatformAdminUser(tx, person.id);
        const domain = await findVerifiedDomain(tx, emailDomainOf(email) ?? '');
        const vouched = !platformAdmin && domain?.tenantId === tenantId;
        const roleKey = await roleFor(tx, directory, []);
        const status = vouched ? (input.active ? 'active' : 'suspended') : 'invited';
        await recordAudit(tx, null, request, {
          tenantId,
          action: status === 'invited' ? 'user.created' : 'member.added',
          target: { type: 'user', id: person.id },
          summary: { email, roleKey, status, via: 'scim', directoryId: directory.id, scimUserId: id },
        });
        // Last before the commit: the seat lock serializes the organization's adds, so it is held
        // for the count and the insert only (an initial sync sends many at once).
        await claimSeat(tx, tenantId);
        await addOrgMember(tx, {
          tenantId,
          userId: person.id,
          roleKey,
          status,
          ...(status === 'invited' ? { invitedEmail: email, invitedName: displayNameOf(input) } : {}),
        });
      }
      return id;
    });
    return await userAnswer(deps, deps.db, directory, created);
  } catch (error) {
    if (error instanceof AppError && SEAT_REFUSALS.has(error.code)) {
      throw new ScimError(403, 'the organization has no free seat for another member');
    }
    if ((error as { cause?: { code?: string } }).cause?.code === '23505') {
      throw new ScimError(409, 'a User with this userName, externalId or email exists already', 'uniqueness');
    }
    throw error;
  }
}

/**
 * Brings the membership of a SCIM user to what the directory says: active or suspended, and the
 * role its groups map to. Never for a platform admin, an invited membership (the person's to
 * accept; its role may change) or the last active org admin. A suspension ends the person's svc
 * sessions everywhere, with back-channel logout to every application they signed in to, and
 * revokes the API keys they created here. Audited as user.updated.
 */
async function applyStanding(
  tx: DbOrTx,
  caller: ScimCaller,
  row: ScimUserRow,
  next: { active: boolean; roleKey: string },
): Promise<Standing> {
  const { directory, request } = caller;
  const tenantId = directory.tenantId;
  const userId = row.userId;
  await lockOrgAdmins(tx, tenantId);
  const current = await findOrgUser(tx, { tenantId, userId });
  if (!current) {
    return 'no_membership';
  }
  if (current.status !== 'invited' && (await isPlatformAdminUser(tx, userId))) {
    return 'platform_admin';
  }
  const status = current.status === 'invited' ? 'invited' : next.active ? 'active' : 'suspended';
  const changes: Record<string, { from: string; to: string }> = {};
  if (status !== current.status) {
    changes.status = { from: current.status, to: status };
  }
  if (next.roleKey !== current.roleKey) {
    changes.roleKey = { from: current.roleKey, to: next.roleKey };
  }
  if (Object.keys(changes).length === 0) {
    return current.status === 'invited' && !next.active ? 'invited' : 'unchanged';
  }
  const adminNow = current.roleKey === 'org_admin' && current.status === 'active';
  const adminAfter = next.roleKey === 'org_admin' && status === 'active';
  if (adminNow && !adminAfter && (await countOtherActiveOrgAdmins(tx, { tenantId, exceptUserId: userId })) === 0) {
    await recordAudit(tx, null, request, {
      tenantId,
      action: 'directory.change_refused',
      target: { type: 'user', id: userId },
      summary: { reason: 'last_org_admin', changes, directoryId: directory.id, scimUserId: row.id },
    });
    return 'last_org_admin';
  }
  if (changes.roleKey) {
    await updateOrgMemberRole(tx, { tenantId, userId, roleKey: next.roleKey });
  }
  let sessionsEnded = 0;
  if (changes.status) {
    await setOrgMemberStatus(tx, { tenantId, userId, status: status === 'active' ? 'active' : 'suspended' });
    if (status === 'suspended') {
      sessionsEnded = await endEverywhere(tx, caller, userId, 'membership_suspended');
    }
  }
  await recordAudit(tx, null, request, {
    tenantId,
    action: 'user.updated',
    target: { type: 'user', id: userId },
    summary: { changes, via: 'scim', directoryId: directory.id, scimUserId: row.id, ...(changes.status ? { sessionsEnded } : {}) },
  });
  return 'changed';
}

/** The end of a deactivated or deleted person's standing: sessions everywhere, this organization's sign-ins and grants, their keys here. */
async function endEverywhere(
  tx: DbOrTx,
  caller: ScimCaller,
  userId: string,
  reason: 'membership_suspended' | 'membership_removed',
): Promise<number> {
  const tenantId = caller.directory.tenantId;
  await moveSessionsOfMemberOut(tx, { tenantId, userId });
  const ended = await endSessions(tx, { kind: 'directory_deactivated', tenantId, userId });
  await endSessions(tx, { kind: 'membership_ended', tenantId, userId });
  await revokeKeysOfCreator(tx, null, caller.request, { userId, scope: { tenantId }, reason });
  return ended.sessionIds.length;
}

async function lockedUser(tx: DbOrTx, directory: DirectoryRow, id: string) {
  const row = await findScimUser(tx, { tenantId: directory.tenantId, directoryId: directory.id, id, forUpdate: true });
  if (!row) {
    throw new ScimError(404, USER_NOT_FOUND);
  }
  return row;
}

/** PUT and PATCH /Users/{id}: the stored attributes, then the membership's standing. */
async function changeUser(
  deps: ScimDeps,
  caller: ScimCaller,
  id: string,
  change: (current: UserInput) => UserInput,
): Promise<Record<string, unknown>> {
  const { directory } = caller;
  const tenantId = directory.tenantId;
  try {
    return await deps.db.transaction(async (tx) => {
      const current = await lockedUser(tx, directory, id);
      const next = change(userInputOf(current));
      // The resource's email follows the directory; the person's own email is theirs
      // (docs/architecture.md section 7) and stays as it is.
      const email = provisionedEmail(next);
      const updated = await updateScimUser(tx, {
        tenantId,
        id,
        set: {
          userName: next.userName,
          externalId: next.externalId,
          displayName: next.displayName,
          givenName: next.givenName,
          familyName: next.familyName,
          email,
          active: next.active,
        },
        now: new Date(),
      });
      if (!updated) {
        throw new ScimError(404, USER_NOT_FOUND);
      }
      const groups = await groupNamesOfScimUser(tx, { tenantId, scimUserId: id });
      await applyStanding(tx, caller, updated, { active: next.active, roleKey: await roleFor(tx, directory, groups) });
      return userAnswer(deps, tx, directory, id);
    });
  } catch (error) {
    if ((error as { cause?: { code?: string } }).cause?.code === '23505') {
      throw new ScimError(409, 'another User of this directory has this userName or externalId', 'uniqueness');
    }
    throw error;
  }
}

export function replaceUser(deps: ScimDeps, caller: ScimCaller, id: string, body: unknown): Promise<Record<string, unknown>> {
  const input = userFromBody(body);
  return changeUser(deps, caller, id, () => input);
}

export function patchUserResource(deps: ScimDeps, caller: ScimCaller, id: string, body: unknown): Promise<Record<string, unknown>> {
  const operations: PatchOperation[] = patchOperations(body);
  return changeUser(deps, caller, id, (current) => patchUser(current, operations));
}

/**
 * DELETE /Users/{id}: the SCIM user goes, and with it the membership (its sessions end as for a
 * deactivation). An invited membership is withdrawn. A platform admin's membership, and the last
 * active org admin's, stay (the refusal is audited).
 */
export async function deleteUser(deps: ScimDeps, caller: ScimCaller, id: string): Promise<void> {
  const { directory, request } = caller;
  const tenantId = directory.tenantId;
  await deps.db.transaction(async (tx) => {
    const row = await lockedUser(tx, directory, id);
    const userId = row.userId;
    await lockOrgAdmins(tx, tenantId);
    const current = await findOrgUser(tx, { tenantId, userId });
    let outcome: Standing = 'changed';
    if (!current) {
      outcome = 'no_membership';
    } else if (current.status === 'invited') {
      await declineInvitedMembership(tx, { tenantId, userId });
      await recordAudit(tx, null, request, {
        tenantId,
        action: 'membership.withdrawn',
        target: { type: 'user', id: userId },
        summary: { email: current.invitedEmail ?? row.email, roleKey: current.roleKey, via: 'scim', directoryId: directory.id },
      });
    } else if (await isPlatformAdminUser(tx, userId)) {
      outcome = 'platform_admin';
    } else if (
      current.roleKey === 'org_admin' &&
      current.status === 'active' &&
      (await countOtherActiveOrgAdmins(tx, { tenantId, exceptUserId: userId })) === 0
    ) {
      outcome = 'last_org_admin';
    } else {
      const sessionsEnded = await endEverywhere(tx, caller, userId, 'membership_removed');
      await removeOrgMember(tx, { tenantId, userId });
      await recordAudit(tx, null, request, {
        tenantId,
        action: 'member.removed',
        target: { type: 'user', id: userId },
        summary: {
          email: row.email,
          roleKey: current.roleKey,
          status: current.status,
          via: 'scim',
          directoryId: directory.id,
          sessionsEnded,
        },
      });
    }
    if (outcome === 'platform_admin' || outcome === 'last_org_admin') {
      await recordAudit(tx, null, request, {
        tenantId,
        action: 'directory.change_refused',
        target: { type: 'user', id: userId },
        summary: { reason: outcome, change: 'delete', directoryId: directory.id, scimUserId: id },
      });
    }
    await deleteScimUser(tx, { tenantId, id });
  });
}

// --- Groups -------------------------------------------------------------------------------------

export async function listGroups(deps: ScimDeps, caller: ScimCaller, query: ListQuery): Promise<Record<string, unknown>> {
  const { directory } = caller;
  const filter = filterOf(query.filter, GROUP_FILTER_ATTRIBUTES);
  const page = pageOf(query);
  const { total, rows } = await listScimGroups(deps.db, {
    tenantId: directory.tenantId,
    directoryId: directory.id,
    where: filter ? scimFilterSql(filter, SCIM_GROUP_FILTER_COLUMNS) : undefined,
    offset: page.offset,
    limit: page.limit,
  });
  const withMembers = !excludesGroupsOrMembers(query, 'members');
  const members = withMembers
    ? await membersOfScimGroups(deps.db, { tenantId: directory.tenantId, groupIds: rows.map((r) => r.id) })
    : undefined;
  const base = baseOf(deps, directory);
  return {
    schemas: [LIST_SCHEMA],
    totalResults: total,
    startIndex: page.startIndex,
    itemsPerPage: rows.length,
    Resources: rows.map((r) => groupResource(base, r, members ? (members.get(r.id) ?? []) : undefined)),
  };
}

async function groupAnswer(deps: ScimDeps, db: DbOrTx, directory: DirectoryRow, id: string, withMembers = true) {
  const row = await findScimGroup(db, { tenantId: directory.tenantId, directoryId: directory.id, id });
  if (!row) {
    throw new ScimError(404, GROUP_NOT_FOUND);
  }
  const members = withMembers
    ? ((await membersOfScimGroups(db, { tenantId: directory.tenantId, groupIds: [id] })).get(id) ?? [])
    : undefined;
  return groupResource(baseOf(deps, directory), row, members);
}

export function getGroup(deps: ScimDeps, caller: ScimCaller, id: string, query: ListQuery = {}): Promise<Record<string, unknown>> {
  return groupAnswer(deps, deps.db, caller.directory, id, !excludesGroupsOrMembers(query, 'members'));
}

/** Members must be Users of this directory: an id of another directory or organization is a 400, and nothing is stored. */
async function assertMembersHere(tx: DbOrTx, directory: DirectoryRow, ids: string[]): Promise<void> {
  const found = await existingScimUserIds(tx, { tenantId: directory.tenantId, directoryId: directory.id, ids });
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length > 0) {
    throw new ScimError(400, `not Users of this directory: ${missing.slice(0, 5).join(', ')}`, 'invalidValue');
  }
}

/** Recomputes the role (and keeps the status) of SCIM users whose groups changed. */
async function restand(tx: DbOrTx, caller: ScimCaller, scimUserIds: string[]): Promise<void> {
  const { directory } = caller;
  for (const scimUserId of new Set(scimUserIds)) {
    const row = await findScimUser(tx, { tenantId: directory.tenantId, directoryId: directory.id, id: scimUserId });
    if (row) {
      const groups = await groupNamesOfScimUser(tx, { tenantId: directory.tenantId, scimUserId });
      await applyStanding(tx, caller, row, { active: row.active, roleKey: await roleFor(tx, directory, groups) });
    }
  }
}

/** Writes a group's name and members and re-stands everyone who joined or left (or all its members when its name changed). */
async function storeGroup(
  tx: DbOrTx,
  caller: ScimCaller,
  id: string,
  before: GroupInput | null,
  next: GroupInput,
  action: 'directory_group.created' | 'directory_group.updated',
): Promise<void> {
  const { directory, request } = caller;
  const tenantId = directory.tenantId;
  await assertMembersHere(tx, directory, next.members);
  const previous = new Set(before?.members ?? []);
  const wanted = new Set(next.members);
  const added = await addScimGroupMembers(tx, { tenantId, groupId: id, scimUserIds: next.members.filter((m) => !previous.has(m)) });
  const removed = await removeScimGroupMembers(tx, { tenantId, groupId: id, scimUserIds: [...previous].filter((m) => !wanted.has(m)) });
  const renamed = before !== null && before.displayName.toLowerCase() !== next.displayName.toLowerCase();
  await restand(tx, caller, renamed ? [...next.members, ...removed] : [...added, ...removed]);
  await recordAudit(tx, null, request, {
    tenantId,
    action,
    target: { type: 'directory_group', id },
    summary: {
      directoryId: directory.id,
      displayName: next.displayName,
      ...(renamed ? { previousDisplayName: before?.displayName } : {}),
      membersAdded: added.length,
      membersRemoved: removed.length,
    },
  });
}

export async function createGroup(deps: ScimDeps, caller: ScimCaller, body: unknown): Promise<Record<string, unknown>> {
  const { directory } = caller;
  const input = groupFromBody(body);
  const id = newId('directoryGroup');
  return deps.db.transaction(async (tx) => {
    const row = await insertScimGroup(tx, {
      id,
      tenantId: directory.tenantId,
      directoryId: directory.id,
      displayName: input.displayName,
      externalId: input.externalId,
    });
    if (!row) {
      throw new ScimError(409, 'a Group with this externalId exists already', 'uniqueness');
    }
    await storeGroup(tx, caller, id, null, input, 'directory_group.created');
    return groupAnswer(deps, tx, directory, id);
  });
}

async function changeGroup(
  deps: ScimDeps,
  caller: ScimCaller,
  id: string,
  change: (current: GroupInput) => GroupInput,
  answer: boolean,
): Promise<Record<string, unknown> | undefined> {
  const { directory } = caller;
  const tenantId = directory.tenantId;
  try {
    return await deps.db.transaction(async (tx) => {
      const row = await findScimGroup(tx, { tenantId, directoryId: directory.id, id, forUpdate: true });
      if (!row) {
        throw new ScimError(404, GROUP_NOT_FOUND);
      }
      const members = (await membersOfScimGroups(tx, { tenantId, groupIds: [id] })).get(id)?.map((m) => m.id) ?? [];
      const before: GroupInput = { displayName: row.displayName, externalId: row.externalId, members };
      const next = change(before);
      await updateScimGroup(tx, { tenantId, id, set: { displayName: next.displayName, externalId: next.externalId }, now: new Date() });
      await storeGroup(tx, caller, id, before, next, 'directory_group.updated');
      return answer ? groupAnswer(deps, tx, directory, id) : undefined;
    });
  } catch (error) {
    if ((error as { cause?: { code?: string } }).cause?.code === '23505') {
      throw new ScimError(409, 'another Group of this directory has this externalId', 'uniqueness');
    }
    throw error;
  }
}

export async function replaceGroup(deps: ScimDeps, caller: ScimCaller, id: string, body: unknown): Promise<Record<string, unknown>> {
  const input = groupFromBody(body);
  return (await changeGroup(deps, caller, id, () => input, true)) as Record<string, unknown>;
}

/** PATCH /Groups/{id}: answers 204 (as Entra ID and Okta expect of a group PATCH) unless `answer`. */
export function patchGroupResource(
  deps: ScimDeps,
  caller: ScimCaller,
  id: string,
  body: unknown,
  answer: boolean,
): Promise<Record<string, unknown> | undefined> {
  const operations = patchOperations(body);
  return changeGroup(deps, caller, id, (current) => patchGroup(current, operations, id), answer);
}

export async function deleteGroup(deps: ScimDeps, caller: ScimCaller, id: string): Promise<void> {
  const { directory, request } = caller;
  const tenantId = directory.tenantId;
  await deps.db.transaction(async (tx) => {
    const row = await findScimGroup(tx, { tenantId, directoryId: directory.id, id, forUpdate: true });
    if (!row) {
      throw new ScimError(404, GROUP_NOT_FOUND);
    }
    const removed = await removeScimGroupMembers(tx, { tenantId, groupId: id });
    await deleteScimGroup(tx, { tenantId, id });
    await restand(tx, caller, removed);
    await recordAudit(tx, null, request, {
      tenantId,
      action: 'directory_group.deleted',
      target: { type: 'directory_group', id },
      summary: { directoryId: directory.id, displayName: row.displayName, membersRemoved: removed.length },
    });
  });
}

/** After the group-to-role mapping changed: every SCIM user of the directory gets the role it now maps to. */
export async function restandDirectory(tx: DbOrTx, directory: DirectoryRow, request: RequestMeta): Promise<void> {
  const rows = await scimUsersOfDirectory(tx, { tenantId: directory.tenantId, directoryId: directory.id });
  const caller = { directory, request };
  for (const row of rows) {
    const groups = await groupNamesOfScimUser(tx, { tenantId: directory.tenantId, scimUserId: row.id });
    await applyStanding(tx, caller, row, { active: row.active, roleKey: await roleFor(tx, directory, groups) });
  }
}

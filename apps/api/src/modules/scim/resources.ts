import { ZEmail } from '@svc/contracts/lists';
import type { ScimGroupRow, ScimUserView } from '@svc/db/queries/directories';
import { ScimError } from './errors.ts';
import { normalizeAttribute, type PatchPath, parsePatchPath } from './filter.ts';

// The SCIM 2.0 resources svc serves (RFC 7643; docs/enterprise.md "Directory sync"): what a
// User or Group body may carry, how PATCH operations change it, and the representations
// answered. SCIM attribute names are case-insensitive: every name is compared lower-cased.

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ENTERPRISE_USER_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const SEARCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';

/** What svc keeps of a User. */
export type UserInput = {
  userName: string;
  externalId: string | null;
  displayName: string | null;
  givenName: string | null;
  familyName: string | null;
  email: string | null;
  active: boolean;
};

/** What svc keeps of a Group (members are SCIM user ids of the directory). */
export type GroupInput = { displayName: string; externalId: string | null; members: string[] };

/**
 * User attributes of RFC 7643 (and its enterprise extension) svc accepts and does not keep:
 * providers send them by default, so refusing them would stop provisioning. `password` is among
 * them: svc never keeps one (docs/architecture.md section 6). Anything outside the schemas is
 * refused (400 invalidSyntax, invalidPath in a PATCH): nothing is stored.
 */
const IGNORED_USER_ATTRIBUTES = new Set([
  'nickname',
  'profileurl',
  'title',
  'usertype',
  'preferredlanguage',
  'locale',
  'timezone',
  'password',
  'phonenumbers',
  'ims',
  'photos',
  'addresses',
  'groups',
  'entitlements',
  'roles',
  'x509certificates',
  'name.formatted',
  'name.middlename',
  'name.honorificprefix',
  'name.honorificsuffix',
]);

const ENTERPRISE_ATTRIBUTES = new Set(['employeenumber', 'costcenter', 'organization', 'division', 'department', 'manager']);
const ENTERPRISE_PREFIX = `${ENTERPRISE_USER_SCHEMA.toLowerCase()}:`;

/** Attributes every resource may carry and a client does not set. */
const READ_ONLY = new Set(['schemas', 'id', 'meta']);

const MAX_TEXT = 256;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown, name: string, opts: { required?: boolean } = {}): string | null {
  if (value === undefined || value === null || value === '') {
    if (opts.required) {
      throw new ScimError(400, `${name} is required`, 'invalidValue');
    }
    return null;
  }
  if (typeof value !== 'string') {
    throw new ScimError(400, `${name} must be a string`, 'invalidValue');
  }
  const trimmed = value.trim();
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (trimmed.length > MAX_TEXT || /[\u0000-\u001f\u007f]/.test(trimmed)) {
    throw new ScimError(400, `${name} must be at most ${MAX_TEXT} characters without control characters`, 'invalidValue');
  }
  if (opts.required && trimmed === '') {
    throw new ScimError(400, `${name} is required`, 'invalidValue');
  }
  return trimmed === '' ? null : trimmed;
}

/** `active` as providers send it: a boolean, or (Entra ID) the strings "True" and "False" in any case. */
export function booleanOf(value: unknown, name: string): boolean {
  if (typeof value === 'boolean') {
    return value;
  }
  if (typeof value === 'string') {
    const lower = value.trim().toLowerCase();
    if (lower === 'true') {
      return true;
    }
    if (lower === 'false') {
      return false;
    }
  }
  throw new ScimError(400, `${name} must be true or false`, 'invalidValue');
}

function emailOf(value: string): string | null {
  const parsed = ZEmail.safeParse(value);
  return parsed.success ? parsed.data : null;
}

/** The email of an `emails` value: the primary one, else the work one, else the first. */
function emailFromList(value: unknown): string | null {
  if (value === undefined || value === null) {
    return null;
  }
  if (!Array.isArray(value) || value.length > 20) {
    throw new ScimError(400, 'emails must be a list of at most 20 entries', 'invalidValue');
  }
  const entries = value.map((e) => {
    if (!isObject(e)) {
      throw new ScimError(400, 'each email is an object with a value', 'invalidValue');
    }
    return e;
  });
  const chosen =
    entries.find((e) => e.primary === true || (typeof e.primary === 'string' && e.primary.toLowerCase() === 'true')) ??
    entries.find((e) => typeof e.type === 'string' && e.type.toLowerCase() === 'work') ??
    entries[0];
  if (!chosen) {
    return null;
  }
  const raw = text(chosen.value, 'emails.value', { required: true }) as string;
  const email = emailOf(raw);
  if (!email) {
    throw new ScimError(400, 'emails.value must be an email address', 'invalidValue');
  }
  return email;
}

/** Lower-cased keys, refusing one given twice in different cases. */
function lowerKeys(body: Record<string, unknown>, where: string): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const [k, v] of Object.entries(body)) {
    const key = k.toLowerCase();
    if (out.has(key)) {
      throw new ScimError(400, `${where}: ${k} is given twice`, 'invalidSyntax');
    }
    out.set(key, v);
  }
  return out;
}

function checkSchemas(value: unknown, expected: string): void {
  if (value === undefined) {
    return;
  }
  if (!Array.isArray(value) || !value.every((s) => typeof s === 'string')) {
    throw new ScimError(400, 'schemas must be a list of schema URIs', 'invalidSyntax');
  }
  if (!value.some((s) => s.toLowerCase() === expected.toLowerCase())) {
    throw new ScimError(400, `schemas must include ${expected}`, 'invalidSyntax');
  }
}

/** Sets one User attribute (a lower-cased name, possibly `name.givenname`) on `user`. */
function setUserAttribute(user: UserInput, attr: string, value: unknown): void {
  switch (attr) {
    case 'username':
      user.userName = text(value, 'userName', { required: true }) as string;
      return;
    case 'externalid':
      user.externalId = text(value, 'externalId');
      return;
    case 'displayname':
      user.displayName = text(value, 'displayName');
      return;
    case 'active':
      user.active = booleanOf(value, 'active');
      return;
    case 'emails':
      user.email = emailFromList(value);
      return;
    case 'name.givenname':
      user.givenName = text(value, 'name.givenName');
      return;
    case 'name.familyname':
      user.familyName = text(value, 'name.familyName');
      return;
    case 'name': {
      if (value === null) {
        user.givenName = null;
        user.familyName = null;
        return;
      }
      if (!isObject(value)) {
        throw new ScimError(400, 'name must be an object', 'invalidValue');
      }
      for (const [k, v] of lowerKeys(value, 'name')) {
        setUserAttribute(user, `name.${k}`, v);
      }
      return;
    }
  }
  if (IGNORED_USER_ATTRIBUTES.has(attr)) {
    return;
  }
  if (attr === ENTERPRISE_USER_SCHEMA.toLowerCase()) {
    if (!isObject(value)) {
      throw new ScimError(400, `${ENTERPRISE_USER_SCHEMA} must be an object`, 'invalidValue');
    }
    for (const k of Object.keys(value)) {
      if (!ENTERPRISE_ATTRIBUTES.has(k.toLowerCase())) {
        throw new ScimError(400, `${ENTERPRISE_USER_SCHEMA} has no attribute ${k}`, 'invalidSyntax');
      }
    }
    return;
  }
  if (attr.startsWith(ENTERPRISE_PREFIX) && ENTERPRISE_ATTRIBUTES.has(attr.slice(ENTERPRISE_PREFIX.length).split('.')[0] as string)) {
    return;
  }
  throw new ScimError(400, `the User schema has no attribute ${attr.slice(0, 80)}`, 'invalidSyntax');
}

/** A User from a POST or PUT body (RFC 7644 sections 3.3 and 3.5.1). */
export function userFromBody(body: unknown): UserInput {
  if (!isObject(body)) {
    throw new ScimError(400, 'the body must be a JSON object', 'invalidSyntax');
  }
  const user: UserInput = {
    userName: '',
    externalId: null,
    displayName: null,
    givenName: null,
    familyName: null,
    email: null,
    active: true,
  };
  const keys = lowerKeys(body, 'User');
  checkSchemas(keys.get('schemas'), USER_SCHEMA);
  for (const [key, value] of keys) {
    if (!READ_ONLY.has(key)) {
      setUserAttribute(user, normalizeAttribute(key), value);
    }
  }
  if (!user.userName) {
    throw new ScimError(400, 'userName is required', 'invalidValue');
  }
  return user;
}

/** The email svc provisions: the emails value, else a userName that is an email address. */
export function provisionedEmail(user: UserInput): string {
  const email = user.email ?? emailOf(user.userName);
  if (!email) {
    throw new ScimError(400, 'a user needs an email address: in emails, or as userName', 'invalidValue');
  }
  return email;
}

export type PatchOperation = { op: 'add' | 'replace' | 'remove'; path?: string; value?: unknown };

/** The operations of a PATCH body (RFC 7644 section 3.5.2); `op` in any case, as Entra ID sends it. */
export function patchOperations(body: unknown): PatchOperation[] {
  if (!isObject(body)) {
    throw new ScimError(400, 'the body must be a JSON object', 'invalidSyntax');
  }
  const keys = lowerKeys(body, 'PatchOp');
  checkSchemas(keys.get('schemas'), PATCH_SCHEMA);
  const operations = keys.get('operations');
  if (!Array.isArray(operations) || operations.length === 0 || operations.length > 100) {
    throw new ScimError(400, 'Operations must be a list of 1 to 100 operations', 'invalidSyntax');
  }
  return operations.map((raw) => {
    if (!isObject(raw)) {
      throw new ScimError(400, 'each operation is an object', 'invalidSyntax');
    }
    const fields = lowerKeys(raw, 'operation');
    const op = typeof fields.get('op') === 'string' ? (fields.get('op') as string).toLowerCase() : '';
    if (op !== 'add' && op !== 'replace' && op !== 'remove') {
      throw new ScimError(400, 'op must be add, replace or remove', 'invalidSyntax');
    }
    const path = fields.get('path');
    if (path !== undefined && typeof path !== 'string') {
      throw new ScimError(400, 'path must be a string', 'invalidPath');
    }
    if (op === 'remove' && (path === undefined || path === '')) {
      throw new ScimError(400, 'remove needs a path', 'noTarget');
    }
    return { op, ...(path ? { path } : {}), ...(fields.has('value') ? { value: fields.get('value') } : {}) };
  });
}

const EMAIL_SUB_ATTRIBUTES = new Set(['value', 'type', 'primary', 'display']);

/** Applies PATCH operations to a User (what Okta and Entra ID send included). */
export function patchUser(current: UserInput, operations: PatchOperation[]): UserInput {
  const user = { ...current };
  for (const operation of operations) {
    if (operation.path === undefined) {
      if (operation.op === 'remove' || !isObject(operation.value)) {
        throw new ScimError(400, 'an operation without a path needs an object value', 'invalidValue');
      }
      for (const [key, value] of lowerKeys(operation.value, 'value')) {
        if (!READ_ONLY.has(key)) {
          setUserAttribute(user, normalizeAttribute(key), value);
        }
      }
      continue;
    }
    const path: PatchPath = parsePatchPath(operation.path, EMAIL_SUB_ATTRIBUTES);
    if (path.filter) {
      // emails[type eq "work"].value: svc keeps one email, whichever entry the filter names.
      if (path.attr !== 'emails') {
        if (IGNORED_USER_ATTRIBUTES.has(path.attr)) {
          continue;
        }
        throw new ScimError(400, `svc cannot filter ${path.attr} in a path`, 'invalidPath');
      }
      if (operation.op === 'remove') {
        throw new ScimError(400, 'a user keeps its email: replace it instead', 'mutability');
      }
      const raw = path.sub === undefined ? (isObject(operation.value) ? operation.value.value : undefined) : operation.value;
      if (path.sub !== undefined && path.sub !== 'value') {
        continue;
      }
      const email = emailOf(text(raw, 'emails.value', { required: true }) as string);
      if (!email) {
        throw new ScimError(400, 'emails.value must be an email address', 'invalidValue');
      }
      user.email = email;
      continue;
    }
    if (operation.op === 'remove') {
      if (path.attr === 'username' || path.attr === 'active' || path.attr === 'emails') {
        throw new ScimError(400, `${path.attr} cannot be removed`, 'mutability');
      }
      setUserAttribute(user, path.attr, null);
      continue;
    }
    if (path.attr === 'emails' && isObject(operation.value)) {
      setUserAttribute(user, 'emails', [operation.value]);
      continue;
    }
    setUserAttribute(user, path.attr, operation.value);
  }
  if (!user.userName) {
    throw new ScimError(400, 'userName is required', 'invalidValue');
  }
  return user;
}

/** The member ids of a Group's `members` value: `[{ value }]`. */
function memberIds(value: unknown): string[] {
  if (value === null || value === undefined) {
    return [];
  }
  const list = Array.isArray(value) ? value : [value];
  if (list.length > 1000) {
    throw new ScimError(400, 'at most 1000 members per request', 'tooMany');
  }
  return list.map((m) => {
    if (!isObject(m)) {
      throw new ScimError(400, 'each member is an object with a value', 'invalidValue');
    }
    const id = [...lowerKeys(m, 'member')].find(([k]) => k === 'value')?.[1];
    if (typeof id !== 'string' || id.length === 0 || id.length > 64) {
      throw new ScimError(400, 'each member needs the value of a User id', 'invalidValue');
    }
    return id;
  });
}

const GROUP_ATTRIBUTES = new Set(['displayname', 'externalid', 'members']);

/** A Group from a POST or PUT body. */
export function groupFromBody(body: unknown): GroupInput {
  if (!isObject(body)) {
    throw new ScimError(400, 'the body must be a JSON object', 'invalidSyntax');
  }
  const keys = lowerKeys(body, 'Group');
  checkSchemas(keys.get('schemas'), GROUP_SCHEMA);
  const group: GroupInput = { displayName: '', externalId: null, members: [] };
  for (const [key, value] of keys) {
    if (READ_ONLY.has(key)) {
      continue;
    }
    setGroupAttribute(group, normalizeAttribute(key), value);
  }
  if (!group.displayName) {
    throw new ScimError(400, 'displayName is required', 'invalidValue');
  }
  return group;
}

function setGroupAttribute(group: GroupInput, attr: string, value: unknown): void {
  if (!GROUP_ATTRIBUTES.has(attr)) {
    throw new ScimError(400, `the Group schema has no attribute ${attr.slice(0, 80)}`, 'invalidSyntax');
  }
  if (attr === 'displayname') {
    group.displayName = text(value, 'displayName', { required: true }) as string;
  } else if (attr === 'externalid') {
    group.externalId = text(value, 'externalId');
  } else {
    group.members = [...new Set(memberIds(value))];
  }
}

const MEMBER_SUB_ATTRIBUTES = new Set(['value', 'display', 'type', '$ref']);

/** Applies PATCH operations to a Group: renames, and members added, removed or replaced. */
export function patchGroup(current: GroupInput, operations: PatchOperation[], groupId: string): GroupInput {
  const group = { ...current, members: [...current.members] };
  for (const operation of operations) {
    if (operation.path === undefined) {
      if (operation.op === 'remove' || !isObject(operation.value)) {
        throw new ScimError(400, 'an operation without a path needs an object value', 'invalidValue');
      }
      for (const [key, value] of lowerKeys(operation.value, 'value')) {
        if (key === 'id') {
          // Okta sends the group's own id back in a replace: harmless when it is this group's.
          if (value !== groupId) {
            throw new ScimError(400, 'id cannot be changed', 'mutability');
          }
          continue;
        }
        if (READ_ONLY.has(key)) {
          continue;
        }
        const attr = normalizeAttribute(key);
        if (attr === 'members' && operation.op === 'add') {
          group.members = [...new Set([...group.members, ...memberIds(value)])];
        } else {
          setGroupAttribute(group, attr, value);
        }
      }
      continue;
    }
    const path = parsePatchPath(operation.path, MEMBER_SUB_ATTRIBUTES);
    if (path.attr !== 'members') {
      if (path.filter) {
        throw new ScimError(400, `svc cannot filter ${path.attr} in a path`, 'invalidPath');
      }
      if (operation.op === 'remove') {
        if (path.attr === 'displayname') {
          throw new ScimError(400, 'displayName cannot be removed', 'mutability');
        }
        setGroupAttribute(group, path.attr, null);
      } else {
        setGroupAttribute(group, path.attr, operation.value);
      }
      continue;
    }
    if (path.filter) {
      // members[value eq "..."]: the members the filter names (value eq, or an or of them).
      if (operation.op !== 'remove') {
        throw new ScimError(400, 'a members[...] path is for remove only', 'invalidPath');
      }
      const named = memberValuesOf(path.filter);
      group.members = group.members.filter((id) => !named.has(id));
      continue;
    }
    if (operation.op === 'add') {
      group.members = [...new Set([...group.members, ...memberIds(operation.value)])];
    } else if (operation.op === 'replace') {
      group.members = [...new Set(memberIds(operation.value))];
    } else if (operation.value === undefined) {
      group.members = [];
    } else {
      // Entra ID's remove: path "members" with the members to remove as the value.
      const named = new Set(memberIds(operation.value));
      group.members = group.members.filter((id) => !named.has(id));
    }
  }
  return group;
}

type Filter = import('@svc/db/queries/directories').ScimFilter;

function memberValuesOf(filter: Filter): Set<string> {
  if (filter.kind === 'cmp' && filter.attr === 'value' && filter.op === 'eq' && typeof filter.value === 'string') {
    return new Set([filter.value]);
  }
  if (filter.kind === 'or') {
    return new Set(filter.items.flatMap((f) => [...memberValuesOf(f)]));
  }
  throw new ScimError(400, 'a members filter must be value eq "<id>" (or several joined by or)', 'invalidPath');
}

/** The User input a stored user stands for (the base a PATCH applies to). */
export function userInputOf(row: ScimUserView): UserInput {
  return {
    userName: row.userName,
    externalId: row.externalId,
    displayName: row.displayName,
    givenName: row.givenName,
    familyName: row.familyName,
    email: row.email,
    active: row.active,
  };
}

const iso = (at: Date) => at.toISOString();

/** A User as SCIM answers it. */
export function userResource(baseUrl: string, row: ScimUserView, groups: { id: string; displayName: string }[]): Record<string, unknown> {
  const name: Record<string, string> = {};
  if (row.givenName) {
    name.givenName = row.givenName;
  }
  if (row.familyName) {
    name.familyName = row.familyName;
  }
  if (row.givenName || row.familyName) {
    name.formatted = [row.givenName, row.familyName].filter(Boolean).join(' ');
  }
  return {
    schemas: [USER_SCHEMA],
    id: row.id,
    ...(row.externalId ? { externalId: row.externalId } : {}),
    userName: row.userName,
    ...(Object.keys(name).length ? { name } : {}),
    ...(row.displayName ? { displayName: row.displayName } : {}),
    emails: [{ value: row.email, type: 'work', primary: true }],
    active: row.active,
    groups: groups.map((g) => ({ value: g.id, display: g.displayName, $ref: `${baseUrl}/Groups/${g.id}` })),
    meta: {
      resourceType: 'User',
      created: iso(row.createdAt),
      lastModified: iso(row.updatedAt),
      location: `${baseUrl}/Users/${row.id}`,
      version: `W/"${row.version}"`,
    },
  };
}

/** A Group as SCIM answers it. */
export function groupResource(
  baseUrl: string,
  row: ScimGroupRow,
  members: { id: string; userName: string }[] | undefined,
): Record<string, unknown> {
  return {
    schemas: [GROUP_SCHEMA],
    id: row.id,
    ...(row.externalId ? { externalId: row.externalId } : {}),
    displayName: row.displayName,
    ...(members ? { members: members.map((m) => ({ value: m.id, display: m.userName, $ref: `${baseUrl}/Users/${m.id}` })) } : {}),
    meta: {
      resourceType: 'Group',
      created: iso(row.createdAt),
      lastModified: iso(row.updatedAt),
      location: `${baseUrl}/Groups/${row.id}`,
      version: `W/"${row.version}"`,
    },
  };
}

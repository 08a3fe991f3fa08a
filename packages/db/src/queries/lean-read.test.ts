import { newId } from '@svc/contracts/ids';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/db.ts';
import { createDatabase, type Database, leanRead } from '../client.ts';
import { apiKeys } from '../schema/api-keys.ts';
import { organizations } from '../schema/organizations.ts';
import { prepareFindApiKeyBySecretHash, prepareFindApiKeyCreatorStanding } from './api-keys.ts';
import { findOrganizationById, findOrganizationBySlug } from './organizations.ts';

// The reads every authenticated request makes run through `leanRead` (client.ts) instead of
// drizzle's execute: each must answer exactly what drizzle's own query answers, types included
// (Dates, arrays, booleans, nulls), or a revoked or expired key would read as live.

let database: Database;
let tenantId: string;
let platformId: string;

beforeAll(async () => {
  database = createDatabase({ url: await createTestDatabase(), max: 2 });
  tenantId = newId('organization');
  platformId = newId('organization');
  const { db } = database;
  await db.execute(sql`insert into organizations (id, slug, name) values (${tenantId}, 'lean-acme', 'Acme')`);
  await db.execute(sql`insert into organizations (id, slug, name, kind) values (${platformId}, 'lean-platform', 'Platform', 'platform')`);
  for (const [id, status] of [
    ['usr_leancustom', 'active'],
    ['usr_leanadmin', 'active'],
    ['usr_leanoutsider', 'suspended'],
    ['usr_leanproduct', 'active'],
  ] as const) {
    await db.execute(
      sql`insert into users (id, engine_subject, email, name, status) values (${id}, ${id}, ${`${id}@example.com`}, ${id}, ${status})`,
    );
  }
  await db.execute(
    sql`insert into roles (id, tenant_id, key, name, permissions) values (${newId('role')}, ${tenantId}, 'auditor', 'Auditor', ${'{tenant.read,audit.read}'}::text[])`,
  );
  await db.execute(sql`insert into memberships (tenant_id, user_id, role_key) values (${tenantId}, 'usr_leancustom', 'auditor')`);
  await db.execute(sql`insert into memberships (tenant_id, user_id, role_key) values (${platformId}, 'usr_leanadmin', 'org_admin')`);
  // A product role of the platform: what org_member holds in svc's control plane (access/role-grants.ts).
  await db.execute(
    sql`insert into product_roles (id, key, name, permissions) values ('prl_leanaccountantlean', 'accountant', 'Accountant', '{}')`,
  );
  await db.execute(sql`insert into memberships (tenant_id, user_id, role_key) values (${tenantId}, 'usr_leanproduct', 'accountant')`);
  await db.execute(sql`
    insert into api_keys (id, tenant_id, name, scopes, secret_hash, secret_prefix, created_by_user_id, expires_at, revoked_at, last_used_at, rotated_at)
    values ('key_leanfull', ${tenantId}, 'Full', ${'{tenant.read,members.read}'}::text[], 'hash-full', 'sk_live_full', 'usr_leancustom',
            '2031-02-03T04:05:06.789Z', '2026-01-02T03:04:05.006Z', '2026-01-01T00:00:00.001Z', '2025-12-31T23:59:59.999Z')`);
  await db.execute(sql`
    insert into api_keys (id, tenant_id, name, scopes, secret_hash, secret_prefix, created_by_user_id)
    values ('key_leanbare', ${tenantId}, 'Bare', ${'{}'}::text[], 'hash-bare', 'sk_live_bare', null)`);
});
afterAll(async () => {
  await database?.close();
});

describe('leanRead: the hot reads answer what drizzle answers', () => {
  it('an API key row, with every timestamp set and with none, and an unknown hash', async () => {
    const find = prepareFindApiKeyBySecretHash(database.db);
    for (const hash of ['hash-full', 'hash-bare']) {
      const row = (await database.db.select().from(apiKeys).where(eq(apiKeys.secretHash, hash)))[0];
      const expected = row && {
        id: row.id,
        tenantId: row.tenantId,
        name: row.name,
        scopes: row.scopes,
        createdByUserId: row.createdByUserId,
        expiresAt: row.expiresAt,
        revokedAt: row.revokedAt,
      };
      const found = await find(hash);
      expect(found).toStrictEqual(expected);
    }
    const full = await find('hash-full');
    expect(full?.revokedAt).toBeInstanceOf(Date);
    expect(full?.revokedAt?.toISOString()).toBe('2026-01-02T03:04:05.006Z');
    expect(full?.expiresAt?.toISOString()).toBe('2031-02-03T04:05:06.789Z');
    expect(full?.scopes).toEqual(['tenant.read', 'members.read']);
    expect((await find('hash-bare'))?.revokedAt).toBeNull();
    expect(await find('no-such-hash')).toBeUndefined();
  });

  it("a key creator's standing: a custom role, a platform admin with no membership, a suspended outsider, a deleted user", async () => {
    const find = prepareFindApiKeyCreatorStanding(database.db);
    expect(await find({ userId: 'usr_leancustom', tenantId })).toStrictEqual({
      status: 'active',
      roleKey: 'auditor',
      rolePermissions: ['tenant.read', 'audit.read'],
      isProductRole: false,
      isPlatformAdmin: false,
    });
    expect(await find({ userId: 'usr_leanproduct', tenantId })).toStrictEqual({
      status: 'active',
      roleKey: 'accountant',
      rolePermissions: null,
      isProductRole: true,
      isPlatformAdmin: false,
    });
    expect(await find({ userId: 'usr_leanadmin', tenantId })).toStrictEqual({
      status: 'active',
      roleKey: null,
      rolePermissions: null,
      isProductRole: false,
      isPlatformAdmin: true,
    });
    expect(await find({ userId: 'usr_leanoutsider', tenantId })).toStrictEqual({
      status: 'suspended',
      roleKey: null,
      rolePermissions: null,
      isProductRole: false,
      isPlatformAdmin: false,
    });
    expect(await find({ userId: 'usr_nobody', tenantId })).toBeUndefined();
  });

  it('an organization by id and by slug, on the pool and inside a transaction', async () => {
    const [expected] = await database.db.select().from(organizations).where(eq(organizations.id, tenantId));
    expect(expected?.createdAt).toBeInstanceOf(Date);
    expect(await findOrganizationById(database.db, tenantId)).toStrictEqual(expected);
    expect(await findOrganizationBySlug(database.db, 'lean-acme')).toStrictEqual(expected);
    expect(await findOrganizationById(database.db, 'org_missing')).toBeUndefined();
    // A transaction's reads run on its own connection: they see its uncommitted rename.
    const undo = new Error('undo the rename');
    const outcome = await database.db
      .transaction(async (tx) => {
        await tx.update(organizations).set({ name: 'Renamed' }).where(eq(organizations.id, tenantId));
        expect((await findOrganizationById(tx, tenantId))?.name).toBe('Renamed');
        expect((await findOrganizationById(database.db, tenantId))?.name).toBe('Acme');
        throw undo;
      })
      .catch((error: unknown) => error);
    expect(outcome).toBe(undo);
    expect((await findOrganizationById(database.db, tenantId))?.name).toBe('Acme');
  });

  it('a statement asked without a value for one of its placeholders is refused as drizzle refuses it, and nothing runs', async () => {
    const query = database.db
      .select({ id: organizations.id })
      .from(organizations)
      .where(eq(organizations.slug, sql.placeholder('slug')))
      .limit(1)
      .prepare('lean_read_missing_placeholder');
    const read = leanRead<{ id: string }>(query, { id: organizations.id });
    expect(() => read.first({})).toThrow('No value for placeholder "slug" was provided');
    await expect(query.execute({})).rejects.toThrow('No value for placeholder "slug" was provided');
    expect(await read.first({ slug: 'lean-acme' })).toStrictEqual({ id: tenantId });
  });
});

import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { databaseAtMigration } from '../../../test/support/db.ts';
import type { DbOrTx } from './client.ts';
import { migrateDatabase } from './migrate.ts';
import { findRoleKeyRows } from './queries/role-grants.ts';

/** The last migration before the product's authorization (0024_product_authorization). */
const BEFORE = '0023_application_logo_url';

/**
 * A database as it stood before the product had API resources and product roles, with custom
 * roles, applications and plans in it, migrated to the current schema: every row is still there,
 * unchanged but for the new columns at their empty defaults; the built-in roles' product rows
 * exist (with no permissions); a custom role still resolves as before; changes to roles notify
 * the permission check's caches.
 */
describe('migrating to the product authorization model (0024)', () => {
  const { url, db } = databaseAtMigration('product_authz', BEFORE);

  it('keeps roles, applications and plans as they were, with empty product permissions and features', async () => {
    for (const [table, column] of [
      ['roles', 'product_permissions'],
      ['applications', 'machine_permissions'],
      ['subscription_plans', 'features'],
    ] as const) {
      const [found] = await db`select 1 from information_schema.columns where table_name = ${table} and column_name = ${column}`;
      expect(found, `${table}.${column}`).toBeUndefined();
    }
    const [productRolesTable] = await db`select 1 from information_schema.tables where table_name = 'product_roles'`;
    expect(productRolesTable).toBeUndefined();

    await db`insert into organizations (id, slug, name, kind) values
      ('ten_aaaaaaaaaaaaaaaaaaaa', 'acme', 'Acme', 'tenant'),
      ('ten_bbbbbbbbbbbbbbbbbbbb', 'globex', 'Globex', 'tenant')`;
    await db`insert into roles (id, tenant_id, key, name, permissions, created_at, updated_at) values
      ('rol_aaaaaaaaaaaaaaaaaaaa', 'ten_aaaaaaaaaaaaaaaaaaaa', 'support', 'Support', array['members.read', 'tenant.read'],
        '2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z'),
      ('rol_bbbbbbbbbbbbbbbbbbbb', 'ten_bbbbbbbbbbbbbbbbbbbb', 'support', 'Globex support', '{}', '2026-01-03T00:00:00Z', '2026-01-03T00:00:00Z')`;
    await db`insert into applications
      (id, tenant_id, slug, name, status, publishable_key, secret_key_hash, secret_key_prefix, redirect_urls, allowed_origins,
       post_logout_redirect_urls, backchannel_logout_url, client_type, sign_in_audience, oauth, is_keyless, logo_url, updated_at)
      values
      ('app_aaaaaaaaaaaaaaaaaaaa', 'ten_aaaaaaaaaaaaaaaaaaaa', 'web', 'Web', 'active', 'pk_live_a', ${'a'.repeat(64)}, 'sk_live_aaaa',
        array['https://app.example.com/cb'], array['https://app.example.com'], '{}', null, 'confidential', 'anyone', '{}', false,
        'https://cdn.example.com/logo.png', '2026-01-01T00:00:00Z'),
      ('app_bbbbbbbbbbbbbbbbbbbb', 'ten_bbbbbbbbbbbbbbbbbbbb', 'spa', 'SPA', 'disabled', 'pk_live_b', ${'b'.repeat(64)}, 'sk_live_bbbb',
        '{}', '{}', '{}', null, 'public', 'members', '{}', false, null, '2026-01-02T00:00:00Z')`;
    await db`insert into subscription_plans (id, key, name, seat_limit, usage_limits, is_default, created_at, updated_at) values
      ('pln_aaaaaaaaaaaaaaaaaaaa', 'team', 'Team', 25, '{"api_call": 1000}', null, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')
      on conflict do nothing`;
    const before = {
      roles: await db`select * from roles order by id`,
      applications: await db`select * from applications order by id`,
      plans: await db`select * from subscription_plans order by id`,
    };
    expect(before.roles).toHaveLength(2);
    expect(before.applications).toHaveLength(2);

    await migrateDatabase(url);

    expect(await db`select * from roles order by id`).toEqual(before.roles.map((r) => ({ ...r, product_permissions: [] })));
    expect(await db`select * from applications order by id`).toEqual(
      before.applications.map((r) => ({ ...r, machine_permissions: [], token_endpoint_auth_method: null, jwks: null, jwks_uri: null })),
    );
    expect(await db`select * from subscription_plans order by id`).toEqual(before.plans.map((r) => ({ ...r, features: [] })));

    // The built-in roles' product rows, and nothing else yet.
    const builtin = await db`select id, key, name, permissions, builtin from product_roles order by key`;
    expect(builtin).toEqual([
      { id: 'prl_org_admin', key: 'org_admin', name: 'Organization admin', permissions: [], builtin: true },
      { id: 'prl_org_member', key: 'org_member', name: 'Organization member', permissions: [], builtin: true },
    ]);
    expect(await db`select * from api_resources`).toEqual([]);
    expect(await db`select * from api_permissions`).toEqual([]);

    // A custom role reads as it did, with no product permissions and no product role of its key.
    const rows = await findRoleKeyRows(drizzle(db) as unknown as DbOrTx, { tenantId: 'ten_aaaaaaaaaaaaaaaaaaaa', key: 'support' });
    expect(rows).toEqual({
      productRole: null,
      customRole: { name: 'Support', permissions: ['members.read', 'tenant.read'], productPermissions: [] },
    });
    const builtinRows = await findRoleKeyRows(drizzle(db) as unknown as DbOrTx, { tenantId: 'ten_aaaaaaaaaaaaaaaaaaaa', key: 'org_admin' });
    expect(builtinRows.productRole).toEqual({ name: 'Organization admin', permissions: [], builtin: true });

    // Only the two built-in keys may be built in; a permission name is unique across resources.
    await expect(
      db`insert into product_roles (id, key, name, builtin) values ('prl_xxxxxxxxxxxxxxxxxxxx', 'sneaky', 'Sneaky', true)`,
    ).rejects.toMatchObject({
      code: '23514',
    });
    await db`insert into api_resources (id, identifier, name) values
      ('res_aaaaaaaaaaaaaaaaaaaa', 'https://a.example.com', 'A'), ('res_bbbbbbbbbbbbbbbbbbbb', 'https://b.example.com', 'B')`;
    await db`insert into api_permissions (id, resource_id, name) values ('prm_aaaaaaaaaaaaaaaaaaaa', 'res_aaaaaaaaaaaaaaaaaaaa', 'docs.read')`;
    await expect(
      db`insert into api_permissions (id, resource_id, name) values ('prm_bbbbbbbbbbbbbbbbbbbb', 'res_bbbbbbbbbbbbbbbbbbbb', 'docs.read')`,
    ).rejects.toMatchObject({ code: '23505' });
    await expect(
      db`insert into api_resources (id, identifier, name) values ('res_cccccccccccccccccccc', 'https://a.example.com', 'A2')`,
    ).rejects.toMatchObject({
      code: '23505',
    });
    // Running the migrations again changes nothing (the seed does not duplicate).
    await migrateDatabase(url);
    expect(await db`select count(*)::int as n from product_roles`).toEqual([{ n: 2 }]);
  });

  it("a change to roles or the product's catalog notifies svc_access_changed", async () => {
    const listener = postgres(url, { max: 1, onnotice: () => {} });
    const heard: string[] = [];
    try {
      await listener.listen('svc_access_changed', (payload) => {
        heard.push(payload);
      });
      await db`update roles set product_permissions = array['docs.read'] where id = 'rol_aaaaaaaaaaaaaaaaaaaa'`;
      await db`update product_roles set permissions = array['docs.read'] where id = 'prl_org_member'`;
      await db`delete from api_permissions where name = 'docs.read'`;
      await expect.poll(() => heard.length, { timeout: 5_000 }).toBeGreaterThanOrEqual(3);
      expect(heard.slice(0, 3)).toEqual(['*', '*', '*']);
    } finally {
      await listener.end({ timeout: 1 });
    }
  });
});

import { drizzle } from 'drizzle-orm/postgres-js';
import { describe, expect, it } from 'vitest';
import { databaseAtMigration } from '../../../test/support/db.ts';
import type { DbOrTx } from './client.ts';
import { migrateDatabase } from './migrate.ts';
import { findApplicationWithOrganizationById } from './queries/applications.ts';

/** The last migration before applications had OpenID Connect client settings. */
const BEFORE = '0016_oidc_provider';

/**
 * A database as it stood before applications became OpenID Connect clients, with applications of
 * every kind (with allowlists, disabled, the keyless one), migrated to the current schema: every
 * application is still there, unchanged, as a confidential client anyone may sign in to, with no
 * logout URLs; and nothing but the two client types and audiences can be stored.
 */
describe('migrating applications to OpenID Connect client settings', () => {
  const { url, db } = databaseAtMigration('app_clients', BEFORE);

  it('keeps every application as it was, now a confidential client open to anyone with no logout URLs', async () => {
    const [column] = await db`select 1 from information_schema.columns where table_name = 'applications' and column_name = 'client_type'`;
    expect(column).toBeUndefined();
    await db`insert into organizations (id, slug, name, kind) values
      ('ten_aaaaaaaaaaaaaaaaaaaa', 'acme', 'Acme', 'tenant'),
      ('ten_kkkkkkkkkkkkkkkkkkkk', 'keyless-development', 'Keyless development', 'keyless')`;
    await db`insert into applications
      (id, tenant_id, slug, name, status, publishable_key, secret_key_hash, secret_key_prefix, redirect_urls, allowed_origins, oauth, is_keyless, updated_at)
      values
      ('app_aaaaaaaaaaaaaaaaaaaa', 'ten_aaaaaaaaaaaaaaaaaaaa', 'web', 'Web', 'active', 'pk_live_a', ${'a'.repeat(64)}, 'sk_live_aaaa',
        array['https://app.example.com/cb', '/after'], array['https://app.example.com'], '{"productionProvider":"google"}', false, '2026-01-01T00:00:00Z'),
      ('app_bbbbbbbbbbbbbbbbbbbb', 'ten_aaaaaaaaaaaaaaaaaaaa', 'old', 'Old', 'disabled', 'pk_live_b', ${'b'.repeat(64)}, 'sk_live_bbbb',
        '{}', '{}', '{}', false, '2026-01-02T00:00:00Z'),
      ('app_kkkkkkkkkkkkkkkkkkkk', 'ten_kkkkkkkkkkkkkkkkkkkk', 'keyless-development', 'Keyless', 'active', 'pk_live_k', ${'c'.repeat(64)}, 'sk_live_kkkk',
        '{}', '{}', '{}', true, '2026-01-03T00:00:00Z')`;
    const before = await db`select * from applications order by id`;
    expect(before).toHaveLength(3);

    await migrateDatabase(url);

    const after = await db`select * from applications order by id`;
    expect(after).toEqual(
      before.map((row) => ({
        ...row,
        post_logout_redirect_urls: [],
        backchannel_logout_url: null,
        client_type: 'confidential',
        sign_in_audience: 'anyone',
        // Later migrations' columns: no logo (0023), no machine client settings (0024).
        logo_url: null,
        token_endpoint_auth_method: null,
        jwks: null,
        jwks_uri: null,
        machine_permissions: [],
      })),
    );
    // What the client registry reads.
    const read = await findApplicationWithOrganizationById(drizzle(db) as unknown as DbOrTx, 'app_aaaaaaaaaaaaaaaaaaaa');
    expect(read?.application).toMatchObject({
      redirectUrls: ['https://app.example.com/cb', '/after'],
      allowedOrigins: ['https://app.example.com'],
      postLogoutRedirectUrls: [],
      backchannelLogoutUrl: null,
      clientType: 'confidential',
      signInAudience: 'anyone',
      secretKeyHash: 'a'.repeat(64),
    });
    // Nothing but the two client types and the two audiences.
    await expect(db`update applications set client_type = 'secret' where id = 'app_aaaaaaaaaaaaaaaaaaaa'`).rejects.toMatchObject({
      code: '23514',
    });
    await expect(db`update applications set sign_in_audience = 'everyone' where id = 'app_aaaaaaaaaaaaaaaaaaaa'`).rejects.toMatchObject({
      code: '23514',
    });
  });
});

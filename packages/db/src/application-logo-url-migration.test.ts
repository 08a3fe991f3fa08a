import { drizzle } from 'drizzle-orm/postgres-js';
import { describe, expect, it } from 'vitest';
import { databaseAtMigration } from '../../../test/support/db.ts';
import type { DbOrTx } from './client.ts';
import { migrateDatabase } from './migrate.ts';
import { findApplicationWithOrganizationById } from './queries/applications.ts';

/** The last migration before applications had a logo. */
const BEFORE = '0022_organizations_created_index';

/**
 * A database as it stood before applications had a logo URL, with applications of every kind
 * (active with settings, disabled, the keyless one), migrated to the current schema: every
 * application is still there, unchanged, with no logo; and only https URLs can be stored.
 */
describe('migrating applications to a logo URL', () => {
  const { url, db } = databaseAtMigration('app_logo', BEFORE);

  it('keeps every application as it was, with no logo', async () => {
    const [column] = await db`select 1 from information_schema.columns where table_name = 'applications' and column_name = 'logo_url'`;
    expect(column).toBeUndefined();
    await db`insert into organizations (id, slug, name, kind) values
      ('ten_aaaaaaaaaaaaaaaaaaaa', 'acme', 'Acme', 'tenant'),
      ('ten_kkkkkkkkkkkkkkkkkkkk', 'keyless-development', 'Keyless development', 'keyless')`;
    await db`insert into applications
      (id, tenant_id, slug, name, status, publishable_key, secret_key_hash, secret_key_prefix, redirect_urls, allowed_origins,
       post_logout_redirect_urls, backchannel_logout_url, client_type, sign_in_audience, oauth, is_keyless, updated_at)
      values
      ('app_aaaaaaaaaaaaaaaaaaaa', 'ten_aaaaaaaaaaaaaaaaaaaa', 'web', 'Web', 'active', 'pk_live_a', ${'a'.repeat(64)}, 'sk_live_aaaa',
        array['https://app.example.com/cb'], array['https://app.example.com'], array['https://app.example.com/bye'],
        'https://app.example.com/bcl', 'public', 'members', '{"productionProvider":"google"}', false, '2026-01-01T00:00:00Z'),
      ('app_bbbbbbbbbbbbbbbbbbbb', 'ten_aaaaaaaaaaaaaaaaaaaa', 'old', 'Old', 'disabled', 'pk_live_b', ${'b'.repeat(64)}, 'sk_live_bbbb',
        '{}', '{}', '{}', null, 'confidential', 'anyone', '{}', false, '2026-01-02T00:00:00Z'),
      ('app_kkkkkkkkkkkkkkkkkkkk', 'ten_kkkkkkkkkkkkkkkkkkkk', 'keyless-development', 'Keyless', 'active', 'pk_live_k', ${'c'.repeat(64)}, 'sk_live_kkkk',
        '{}', '{}', '{}', null, 'public', 'anyone', '{}', true, '2026-01-03T00:00:00Z')`;
    const before = await db`select * from applications order by id`;
    expect(before).toHaveLength(3);

    await migrateDatabase(url);

    const after = await db`select * from applications order by id`;
    // A later migration's columns (0024): no machine client settings.
    expect(after).toEqual(
      before.map((row) => ({
        ...row,
        logo_url: null,
        token_endpoint_auth_method: null,
        jwks: null,
        jwks_uri: null,
        machine_permissions: [],
      })),
    );
    // What the client registry and the hosted pages read.
    const read = await findApplicationWithOrganizationById(drizzle(db) as unknown as DbOrTx, 'app_aaaaaaaaaaaaaaaaaaaa');
    expect(read?.application).toMatchObject({ name: 'Web', logoUrl: null, clientType: 'public', signInAudience: 'members' });

    // Only https, at most 2,048 characters.
    await db`update applications set logo_url = 'https://cdn.example.com/logo.png' where id = 'app_aaaaaaaaaaaaaaaaaaaa'`;
    for (const bad of ['http://cdn.example.com/logo.png', 'javascript:alert(1)', `https://cdn.example.com/${'x'.repeat(2048)}`]) {
      await expect(db`update applications set logo_url = ${bad} where id = 'app_aaaaaaaaaaaaaaaaaaaa'`).rejects.toMatchObject({
        code: '23514',
      });
    }
  });
});

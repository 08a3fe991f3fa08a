import { describe, expect, it } from 'vitest';
import { databaseAtMigration } from '../../../test/support/db.ts';
import { migrateDatabase } from './migrate.ts';

/** The last migration before setup links. */
const BEFORE = '0031_partition_by_time';

/**
 * A database holding an organization with an SSO connection and a directory, and the audit entries
 * the SSO sign-in counts read, migrated: every row is still there, unchanged; the new table is
 * empty and follows its organization on delete.
 */
describe('migrating to setup links', () => {
  const { url, db } = databaseAtMigration('setup_links', BEFORE);

  it('keeps every row as it was, and setup links belong to their organization', async () => {
    await db`insert into organizations (id, slug, name, kind) values ('ten_aaaaaaaaaaaaaaaaaaaa', 'acme', 'Acme', 'tenant')`;
    await db`insert into sso_connections (id, tenant_id, name, protocol, attribute_mapping, last_sign_in_at) values
      ('ssoc_aaaaaaaaaaaaaaaaaaaa', 'ten_aaaaaaaaaaaaaaaaaaaa', 'Okta', 'saml', ${db.json({ email: 'email', name: 'name', groups: 'groups' })}, now())`;
    await db`insert into scim_directories (id, tenant_id, name, token_hash, token_prefix) values
      ('dir_aaaaaaaaaaaaaaaaaaaa', 'ten_aaaaaaaaaaaaaaaaaaaa', 'Okta', 'hash', 'scim_abcdef')`;
    await db`insert into audit_logs (id, tenant_id, actor_type, action, target_type, summary) values
      ('aud_aaaaaaaaaaaaaaaaaaaa', 'ten_aaaaaaaaaaaaaaaaaaaa', 'system', 'sso.signed_in', 'user', ${db.json({ connectionId: 'ssoc_aaaaaaaaaaaaaaaaaaaa' })})`;
    const before = {
      connections: await db`select * from sso_connections`,
      directories: await db`select * from scim_directories`,
      audit: await db`select * from audit_logs`,
    };

    await migrateDatabase(url);

    expect(await db`select * from sso_connections`).toEqual(before.connections);
    expect(await db`select * from scim_directories`).toEqual(before.directories);
    expect(await db`select * from audit_logs`).toEqual(before.audit);
    expect(await db`select * from setup_links`).toEqual([]);
    await db`insert into setup_links (id, tenant_id, purpose, label, token_hash, created_by_user_id, expires_at) values
      ('setl_aaaaaaaaaaaaaaaaaaaa', 'ten_aaaaaaaaaaaaaaaaaaaa', 'sso', 'Acme IT', 'hash', 'usr_aaaaaaaaaaaaaaaaaaaa', now() + interval '1 day')`;
    await db`delete from organizations where id = 'ten_aaaaaaaaaaaaaaaaaaaa'`;
    expect(await db`select * from setup_links`).toEqual([]);
  });
});

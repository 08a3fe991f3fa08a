import { describe, expect, it } from 'vitest';
import { databaseAtMigration } from '../../../test/support/db.ts';
import { migrateDatabase } from './migrate.ts';
import { findMembershipsOfUsers } from './queries/sessions.ts';

/** The last migration before memberships had a status. */
const BEFORE = '0014_webhook_attempts_removed_by_trigger';

/**
 * A database as it stood before memberships got a status, holding memberships of every kind
 * (org admins, members, custom roles, a user who never signed in, the platform workspace), then
 * migrated to the current schema: every membership is still there, unchanged, and active.
 */
describe('migrating memberships to invited / active / suspended', () => {
  const { url, db } = databaseAtMigration('memberships', BEFORE);

  it('keeps every membership, with its role and date, as active; the session read still finds them', async () => {
    const [column] = await db`select 1 from information_schema.columns where table_name = 'memberships' and column_name = 'status'`;
    expect(column).toBeUndefined();
    await db`insert into organizations (id, slug, name, kind) values
      ('ten_aaaaaaaaaaaaaaaaaaaa', 'acme', 'Acme', 'tenant'),
      ('ten_bbbbbbbbbbbbbbbbbbbb', 'globex', 'Globex', 'tenant'),
      ('ten_pppppppppppppppppppp', 'platform', 'Platform', 'platform')`;
    await db`insert into users (id, engine_subject, email, email_verified, name, last_sign_in_at) values
      ('usr_aaaaaaaaaaaaaaaaaaaa', 'sub-a', 'ann@example.com', true, 'Ann', now()),
      ('usr_bbbbbbbbbbbbbbbbbbbb', 'sub-b', 'bob@example.com', true, 'Bob', now()),
      ('usr_cccccccccccccccccccc', null, 'placeholder@example.com', false, 'Never signed in', null)`;
    await db`insert into roles (id, tenant_id, key, name, permissions) values
      ('rol_aaaaaaaaaaaaaaaaaaaa', 'ten_aaaaaaaaaaaaaaaaaaaa', 'support', 'Support', array['users.read'])`;
    await db`insert into memberships (tenant_id, user_id, role_key, created_at) values
      ('ten_aaaaaaaaaaaaaaaaaaaa', 'usr_aaaaaaaaaaaaaaaaaaaa', 'org_admin', '2026-01-01T00:00:00.001Z'),
      ('ten_aaaaaaaaaaaaaaaaaaaa', 'usr_bbbbbbbbbbbbbbbbbbbb', 'support', '2026-01-02T00:00:00.002Z'),
      ('ten_aaaaaaaaaaaaaaaaaaaa', 'usr_cccccccccccccccccccc', 'org_member', '2026-01-03T00:00:00.003Z'),
      ('ten_bbbbbbbbbbbbbbbbbbbb', 'usr_bbbbbbbbbbbbbbbbbbbb', 'org_admin', '2026-01-04T00:00:00.004Z'),
      ('ten_pppppppppppppppppppp', 'usr_aaaaaaaaaaaaaaaaaaaa', 'org_admin', '2026-01-05T00:00:00.005Z')`;
    const before = await db<{ tenant_id: string; user_id: string; role_key: string; created_at: Date }[]>`
      select tenant_id, user_id, role_key, created_at from memberships order by tenant_id, user_id`;
    const versions = await db<{ id: string; memberships_version: string }[]>`select id, memberships_version from users order by id`;
    expect(before).toHaveLength(5);

    await migrateDatabase(url);

    const after = await db<
      {
        tenant_id: string;
        user_id: string;
        role_key: string;
        created_at: Date;
        status: string;
        invited_email: string | null;
        invited_name: string | null;
      }[]
    >`select tenant_id, user_id, role_key, created_at, status, invited_email, invited_name from memberships order by tenant_id, user_id`;
    expect(after).toEqual(before.map((m) => ({ ...m, status: 'active', invited_email: null, invited_name: null })));
    // Adding the column rewrote nothing the memberships version counts: no process's cache is thrown away.
    expect(await db`select id, memberships_version from users order by id`).toEqual(versions);
    // What a session check reads: every membership, as one the user may act in.
    const read = await findMembershipsOfUsers(db, ['usr_aaaaaaaaaaaaaaaaaaaa', 'usr_bbbbbbbbbbbbbbbbbbbb', 'usr_cccccccccccccccccccc']);
    expect(read.get('usr_aaaaaaaaaaaaaaaaaaaa')?.memberships.map((m) => [m.organization.slug, m.roleKey])).toEqual([
      ['acme', 'org_admin'],
      ['platform', 'org_admin'],
    ]);
    expect(read.get('usr_bbbbbbbbbbbbbbbbbbbb')?.memberships.map((m) => [m.organization.slug, m.roleKey])).toEqual([
      ['acme', 'support'],
      ['globex', 'org_admin'],
    ]);
    expect(read.get('usr_cccccccccccccccccccc')?.memberships.map((m) => m.organization.slug)).toEqual(['acme']);
    for (const entry of read.values()) {
      expect(entry.pendingMemberships).toEqual([]);
    }
    // New rows: active unless said otherwise, and nothing but the three statuses.
    await db`insert into memberships (tenant_id, user_id, role_key) values ('ten_bbbbbbbbbbbbbbbbbbbb', 'usr_aaaaaaaaaaaaaaaaaaaa', 'org_member')`;
    const [fresh] =
      await db`select status from memberships where tenant_id = 'ten_bbbbbbbbbbbbbbbbbbbb' and user_id = 'usr_aaaaaaaaaaaaaaaaaaaa'`;
    expect(fresh?.status).toBe('active');
    await expect(
      db`update memberships set status = 'banned' where tenant_id = 'ten_bbbbbbbbbbbbbbbbbbbb' and user_id = 'usr_aaaaaaaaaaaaaaaaaaaa'`,
    ).rejects.toMatchObject({ code: '23514' });
  });
});

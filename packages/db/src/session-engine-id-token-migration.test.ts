import { drizzle } from 'drizzle-orm/postgres-js';
import { describe, expect, it } from 'vitest';
import { databaseAtMigration } from '../../../test/support/db.ts';
import type { DbOrTx } from './client.ts';
import { migrateDatabase } from './migrate.ts';
import { findEngineIdToken, findSessionsByTokenHashes, revokeSessionById } from './queries/sessions.ts';

/** The last migration before sessions kept the engine's ID token. */
const BEFORE = '0024_product_authorization';

/**
 * A database as it stood before sessions kept the engine's sealed ID token, with live, revoked and
 * expired sessions, migrated to the current schema: every session is still there and unchanged,
 * without an engine ID token (signing out of one ends the engine's session as before: without
 * id_token_hint), and the live one still signs its browser in.
 */
describe('migrating sessions to keep the engine ID token', () => {
  const { url, db } = databaseAtMigration('session_engine_id_token', BEFORE);

  it('keeps every session as it was, with no engine ID token', async () => {
    const [column] = await db`select 1 from information_schema.columns where table_name = 'sessions' and column_name = 'engine_id_token'`;
    expect(column).toBeUndefined();
    await db`insert into organizations (id, slug, name, kind) values ('ten_aaaaaaaaaaaaaaaaaaaa', 'acme', 'Acme', 'tenant')`;
    await db`insert into users (id, engine_subject, email, email_verified, name, last_sign_in_at) values
      ('usr_aaaaaaaaaaaaaaaaaaaa', 'sub-a', 'ann@example.com', true, 'Ann', now())`;
    await db`insert into sessions (id, token_hash, user_id, active_tenant_id, is_platform_admin, expires_at, absolute_expires_at, revoked_at, ip_address, user_agent) values
      ('ses_live', ${'1'.repeat(64)}, 'usr_aaaaaaaaaaaaaaaaaaaa', 'ten_aaaaaaaaaaaaaaaaaaaa', false, now() + interval '1 day', now() + interval '7 days', null, '203.0.113.1', 'Firefox'),
      ('ses_revoked', ${'2'.repeat(64)}, 'usr_aaaaaaaaaaaaaaaaaaaa', null, true, now() + interval '1 day', now() + interval '7 days', now(), null, null),
      ('ses_expired', ${'3'.repeat(64)}, 'usr_aaaaaaaaaaaaaaaaaaaa', null, false, now() - interval '1 day', now() + interval '7 days', null, null, null)`;
    const before = await db`select * from sessions order by id`;
    expect(before).toHaveLength(3);

    await migrateDatabase(url);

    const after = await db`select * from sessions order by id`;
    expect(after).toEqual(before.map((row) => ({ ...row, engine_id_token: null })));
    const read = await findSessionsByTokenHashes(db, ['1'.repeat(64)]);
    expect(read.get('1'.repeat(64))?.session.id).toBe('ses_live');

    // A sealed token is kept per session and dropped when the session is revoked.
    const orm = drizzle(db) as unknown as DbOrTx;
    expect(await findEngineIdToken(orm, 'ses_live')).toBeUndefined();
    await db`update sessions set engine_id_token = 'v1.sealed' where id = 'ses_live'`;
    expect(await findEngineIdToken(orm, 'ses_live')).toBe('v1.sealed');
    await revokeSessionById(orm, { id: 'ses_live', at: new Date() });
    expect(await findEngineIdToken(orm, 'ses_live')).toBeUndefined();
  });
});

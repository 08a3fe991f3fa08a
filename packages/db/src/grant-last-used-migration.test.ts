import { describe, expect, it } from 'vitest';
import { databaseAtMigration } from '../../../test/support/db.ts';
import { migrateDatabase } from './migrate.ts';

/** The last migration before grants recorded their last use. */
const BEFORE = '0027_third_party_access';

/**
 * A database holding the OpenID Provider's artifacts (a third-party grant, a refresh token under
 * it, a session), migrated: every row is still there, unchanged, and no grant claims a use it
 * never had (`last_used_at` null).
 */
describe('migrating oidc_payloads to record a grant’s last use', () => {
  const { url, db } = databaseAtMigration('grant_last_used', BEFORE);

  it('keeps every artifact as it was, with no last use', async () => {
    await db`insert into oidc_payloads (model, id, payload, grant_id, expires_at) values
      ('Grant', 'grant-1', ${db.json({ clientId: 'https://agent.example/client.json', accountId: 'usr_1', organization: { id: 'ten_1' } })}, null, now() + interval '14 days'),
      ('RefreshToken', 'rt-1', ${db.json({ grantId: 'grant-1' })}, 'grant-1', now() + interval '14 days'),
      ('Session', 'ses-1', ${db.json({ accountId: 'usr_1' })}, null, null)`;
    const before = await db`select * from oidc_payloads order by model, id`;
    expect(before).toHaveLength(3);

    await migrateDatabase(url);

    expect(await db`select * from oidc_payloads order by model, id`).toEqual(before.map((row) => ({ ...row, last_used_at: null })));
  });
});

import { createDatabase, type Database } from '@svc/db/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../../test/support/db.ts';
import { PostgresAdapter } from './adapter.ts';

/** oidc-provider's persistence contract, against PostgreSQL (what its in-memory adapter does). */
describe('the OpenID Provider adapter on PostgreSQL', () => {
  let database: Database;
  let n = 0;
  const id = () => `id-${++n}-${Math.random().toString(36).slice(2)}`;

  beforeAll(async () => {
    database = createDatabase({ url: await createTestDatabase(), max: 2, applicationName: 'svc-test-oidc-adapter' });
  });

  afterAll(async () => {
    await database?.close();
  });

  it('upsert then find returns the payload; a second upsert replaces it', async () => {
    const adapter = new PostgresAdapter(database.db, 'AuthorizationCode');
    const key = id();
    expect(await adapter.find(key)).toBeUndefined();
    await adapter.upsert(key, { jti: key, kind: 'AuthorizationCode', grantId: 'g1', scope: 'openid' }, 60);
    expect(await adapter.find(key)).toEqual({ jti: key, kind: 'AuthorizationCode', grantId: 'g1', scope: 'openid' });
    await adapter.upsert(key, { jti: key, kind: 'AuthorizationCode', grantId: 'g1', scope: 'openid email' }, 60);
    expect((await adapter.find(key))?.scope).toBe('openid email');
  });

  it('models do not see each other: the same id under another model is another artifact', async () => {
    const key = id();
    await new PostgresAdapter(database.db, 'AuthorizationCode').upsert(key, { jti: key, kind: 'AuthorizationCode' }, 60);
    expect(await new PostgresAdapter(database.db, 'RefreshToken').find(key)).toBeUndefined();
  });

  it('consume marks the payload consumed (epoch seconds) and keeps the first time', async () => {
    const adapter = new PostgresAdapter(database.db, 'AuthorizationCode');
    const key = id();
    await adapter.upsert(key, { jti: key, kind: 'AuthorizationCode' }, 60);
    const before = Math.floor(Date.now() / 1000);
    await adapter.consume(key);
    const first = (await adapter.find(key))?.consumed as number;
    expect(first).toBeGreaterThanOrEqual(before - 1);
    expect(first).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 1);
    await new Promise((r) => setTimeout(r, 1_100));
    await adapter.consume(key);
    expect((await adapter.find(key))?.consumed).toBe(first);
    // A re-save (the provider never does this for a code, but sessions are re-saved) keeps it consumed.
    await adapter.upsert(key, { jti: key, kind: 'AuthorizationCode' }, 60);
    expect((await adapter.find(key))?.consumed).toBe(first);
  });

  it('destroy deletes one artifact', async () => {
    const adapter = new PostgresAdapter(database.db, 'Session');
    const [a, b] = [id(), id()];
    await adapter.upsert(a, { jti: a, uid: `uid-${a}`, kind: 'Session' }, 60);
    await adapter.upsert(b, { jti: b, uid: `uid-${b}`, kind: 'Session' }, 60);
    await adapter.destroy(a);
    expect(await adapter.find(a)).toBeUndefined();
    expect(await adapter.find(b)).toBeDefined();
  });

  it('findByUid finds a session by its uid, and only a live one', async () => {
    const adapter = new PostgresAdapter(database.db, 'Session');
    const key = id();
    await adapter.upsert(key, { jti: key, uid: `uid-${key}`, kind: 'Session', accountId: 'usr_1' }, 60);
    expect((await adapter.findByUid(`uid-${key}`))?.accountId).toBe('usr_1');
    expect(await adapter.findByUid('uid-unknown')).toBeUndefined();
    await adapter.destroy(key);
    expect(await adapter.findByUid(`uid-${key}`)).toBeUndefined();
  });

  it('findByUserCode finds a device code by its user code', async () => {
    const adapter = new PostgresAdapter(database.db, 'DeviceCode');
    const key = id();
    await adapter.upsert(key, { jti: key, userCode: `UC-${key}`, kind: 'DeviceCode' }, 60);
    expect((await adapter.findByUserCode(`UC-${key}`))?.jti).toBe(key);
    expect(await adapter.findByUserCode('UC-unknown')).toBeUndefined();
  });

  it('revokeByGrantId deletes every token of the grant, across models, and nothing of other grants', async () => {
    const codes = new PostgresAdapter(database.db, 'AuthorizationCode');
    const refresh = new PostgresAdapter(database.db, 'RefreshToken');
    const grant = `grant-${id()}`;
    const [c1, r1, other] = [id(), id(), id()];
    await codes.upsert(c1, { jti: c1, grantId: grant }, 60);
    await refresh.upsert(r1, { jti: r1, grantId: grant }, 600);
    await refresh.upsert(other, { jti: other, grantId: `other-${grant}` }, 600);
    await refresh.revokeByGrantId(grant);
    expect(await codes.find(c1)).toBeUndefined();
    expect(await refresh.find(r1)).toBeUndefined();
    expect(await refresh.find(other)).toBeDefined();
  });

  it('an expired artifact is not found (by id, uid or user code) even before the prune job deletes it', async () => {
    const sessions = new PostgresAdapter(database.db, 'Session');
    const key = id();
    await sessions.upsert(key, { jti: key, uid: `uid-${key}`, userCode: `UC-${key}` }, 1);
    expect(await sessions.find(key)).toBeDefined();
    await database.sql`update oidc_payloads set expires_at = now() - interval '1 second' where id = ${key}`;
    expect(await sessions.find(key)).toBeUndefined();
    expect(await sessions.findByUid(`uid-${key}`)).toBeUndefined();
    expect(await sessions.findByUserCode(`UC-${key}`)).toBeUndefined();
  });

  it('an artifact without an expiry lives until destroyed', async () => {
    const adapter = new PostgresAdapter(database.db, 'ReplayDetection');
    const key = id();
    await adapter.upsert(key, { jti: key });
    const [row] = await database.sql<{ expires_at: unknown }[]>`select expires_at from oidc_payloads where id = ${key}`;
    expect(row?.expires_at).toBeNull();
    expect(await adapter.find(key)).toEqual({ jti: key });
  });
});

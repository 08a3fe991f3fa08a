import { newId } from '@svc/contracts/ids';
import { createDatabase, type Database } from '@svc/db/client';
import { insertOrganization } from '@svc/db/queries/organizations';
import { memberships, users } from '@svc/db/schema/identity';
import { organizations } from '@svc/db/schema/organizations';
import { sessions } from '@svc/db/schema/sessions';
import { eq } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../../test/support/db.ts';
import { signInFromEngine } from '../identity/service.ts';
import {
  createSession,
  hashSessionToken,
  revokeSession,
  SESSION_REFRESH_INTERVAL_MS,
  SessionLookup,
  validateSessionToken,
} from './service.ts';

let database: Database;
let url: string;
const settings = { idleMs: 24 * 3_600_000, absoluteMs: 7 * 24 * 3_600_000 };
let n = 0;

beforeAll(async () => {
  url = await createTestDatabase();
  database = createDatabase({ url, max: 5 });
});
afterAll(async () => {
  await database?.close();
});

async function signedIn(now = new Date()) {
  n++;
  const { user, workspace } = await signInFromEngine(
    database.db,
    { subject: `sub-${n}-${Math.random()}`, email: `s${n}@example.com`, emailVerified: true, name: 'S', groups: [] },
    { platformAdminGroup: 'platform-admins' },
  );
  const created = await createSession(
    database.db,
    settings,
    { userId: user.id, activeTenantId: workspace.id, isPlatformAdmin: false },
    now,
  );
  return { user, ...created };
}

describe('sessions', () => {
  it('stores only the SHA-256 of the token and validates the token', async () => {
    const { token, session, user } = await signedIn();
    expect(token).toMatch(/^[a-z2-7]{32}$/);
    const [row] = await database.db.select().from(sessions).where(eq(sessions.id, session.id));
    expect(row?.tokenHash).toBe(hashSessionToken(token));
    expect(JSON.stringify(row)).not.toContain(token);
    const valid = await validateSessionToken(database.db, settings, token);
    expect(valid?.user.id).toBe(user.id);
    expect(valid?.session.id).toMatch(/^ses_/);
  });

  it('refuses unknown, malformed and tampered tokens', async () => {
    const { token } = await signedIn();
    expect(await validateSessionToken(database.db, settings, 'a'.repeat(32))).toBeNull();
    expect(await validateSessionToken(database.db, settings, `${token}x`)).toBeNull();
    expect(await validateSessionToken(database.db, settings, "' or 1=1 --")).toBeNull();
    expect(await validateSessionToken(database.db, settings, hashSessionToken(token))).toBeNull();
  });

  it('a check inside the refresh interval writes nothing; after it, the idle expiry slides once', async () => {
    const start = new Date(Date.now() - 2 * SESSION_REFRESH_INTERVAL_MS);
    const { token, session } = await signedIn(start);
    const soon = new Date(start.getTime() + SESSION_REFRESH_INTERVAL_MS / 2);
    await validateSessionToken(database.db, settings, token, soon);
    const [unchanged] = await database.db.select().from(sessions).where(eq(sessions.id, session.id));
    expect(unchanged?.lastSeenAt.getTime()).toBe(start.getTime());
    const later = new Date(start.getTime() + SESSION_REFRESH_INTERVAL_MS + 1000);
    await validateSessionToken(database.db, settings, token, later);
    const [slid] = await database.db.select().from(sessions).where(eq(sessions.id, session.id));
    expect(slid?.lastSeenAt.getTime()).toBe(later.getTime());
    expect(slid?.expiresAt.getTime()).toBe(later.getTime() + settings.idleMs);
  });

  it('ends at the idle timeout and at the absolute timeout however active', async () => {
    const start = new Date();
    const { token } = await signedIn(start);
    expect(await validateSessionToken(database.db, settings, token, new Date(start.getTime() + settings.idleMs + 1))).toBeNull();
    const active = await signedIn(start);
    // Used every 20 hours: idle never lapses, but the absolute limit still ends it.
    let t = start.getTime();
    while (t + 20 * 3_600_000 < start.getTime() + settings.absoluteMs) {
      t += 20 * 3_600_000;
      expect(await validateSessionToken(database.db, settings, active.token, new Date(t))).not.toBeNull();
    }
    expect(await validateSessionToken(database.db, settings, active.token, new Date(start.getTime() + settings.absoluteMs + 1))).toBeNull();
  });

  it('a revoked session fails its next check; a suspended user has no live session', async () => {
    const { token, session } = await signedIn();
    expect(await revokeSession(database.db, session.id)).toBe(true);
    expect(await validateSessionToken(database.db, settings, token)).toBeNull();
    expect(await revokeSession(database.db, session.id)).toBe(false);

    const other = await signedIn();
    await database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, other.user.id));
    expect(await validateSessionToken(database.db, settings, other.token)).toBeNull();
  });

  it('a check returns the user with every membership in the same read', async () => {
    const { token, user } = await signedIn();
    const valid = await validateSessionToken(database.db, settings, token);
    expect(valid?.user).toMatchObject({ id: user.id, status: 'active' });
    expect(valid?.memberships).toEqual([
      {
        organization: { id: expect.stringMatching(/^ten_/), slug: expect.any(String), name: expect.any(String), kind: 'tenant' },
        roleKey: 'org_admin',
      },
    ]);
    expect(valid?.memberships[0]?.organization.id).toBe(valid?.session.activeTenantId);
  });
});

describe('SessionLookup', () => {
  /** A database handle that counts the session reads it sends (and their parameters). */
  const clients: postgres.Sql[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end()));
  });
  function countingLookup() {
    const reads: unknown[][] = [];
    const membershipReads: unknown[][] = [];
    const client = postgres(url, {
      max: 2,
      debug: (_connection, query, params) => {
        if (query.includes('token_hash = any')) {
          reads.push(params);
        }
        if (query.includes('u.id = any')) {
          membershipReads.push(params);
        }
      },
    });
    clients.push(client);
    return { lookup: new SessionLookup(drizzle(client, { casing: 'snake_case' }), settings), reads, membershipReads };
  }

  it('concurrent checks share one indexed read, and each gets its own answer', async () => {
    const a = await signedIn();
    const b = await signedIn();
    const { lookup, reads } = countingLookup();
    const [ra, rb, ra2, unknown, malformed] = await Promise.all([
      lookup.validate(a.token),
      lookup.validate(b.token),
      lookup.validate(a.token),
      lookup.validate('a'.repeat(32)),
      lookup.validate('nope'),
    ]);
    expect(ra?.user.id).toBe(a.user.id);
    expect(ra2?.session.id).toBe(a.session.id);
    expect(rb?.user.id).toBe(b.user.id);
    expect(unknown).toBeNull();
    expect(malformed).toBeNull();
    expect(reads).toHaveLength(1);
    // One array parameter: three distinct well-formed tokens; the repeated one is asked for once.
    expect(String(reads[0]?.[0]).split(',')).toHaveLength(3);
  });

  it('reads again for every check: a revocation is seen by the very next one', async () => {
    const { token, session } = await signedIn();
    const { lookup, reads } = countingLookup();
    expect(await lookup.validate(token)).not.toBeNull();
    await revokeSession(database.db, session.id);
    expect(await lookup.validate(token)).toBeNull();
    expect(reads).toHaveLength(2);
  });

  it('a failed read rejects every check that shared it', async () => {
    const a = await signedIn();
    const broken = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/none', max: 1 });
    try {
      const lookup = new SessionLookup(broken.db, settings);
      const results = await Promise.allSettled([lookup.validate(a.token), lookup.validate(`${'b'.repeat(32)}`)]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    } finally {
      await broken.close();
    }
  });

  it('memberships are read again only when they changed, and every change is seen by the next check', async () => {
    const { token, user } = await signedIn();
    const { lookup, reads, membershipReads } = countingLookup();
    const first = await lookup.validate(token);
    expect(first?.memberships).toHaveLength(1);
    await lookup.validate(token);
    await lookup.validate(token);
    expect(reads).toHaveLength(3);
    expect(membershipReads).toHaveLength(1);

    // A membership added elsewhere: the very next check shows it.
    const extra = await insertOrganization(database.db, { id: newId('organization'), slug: `extra-${n}-${Date.now()}`, name: 'Extra' });
    await database.db.insert(memberships).values({ tenantId: extra?.id as string, userId: user.id, roleKey: 'org_member' });
    expect((await lookup.validate(token))?.memberships.map((m) => m.organization.name)).toContain('Extra');
    // The organization renamed: shown at once.
    await database.db
      .update(organizations)
      .set({ name: 'Extra renamed' })
      .where(eq(organizations.id, extra?.id as string));
    expect((await lookup.validate(token))?.memberships.map((m) => m.organization.name)).toContain('Extra renamed');
    // Role changed, then removed.
    await database.db
      .update(memberships)
      .set({ roleKey: 'org_admin' })
      .where(eq(memberships.tenantId, extra?.id as string));
    expect((await lookup.validate(token))?.memberships.find((m) => m.organization.id === extra?.id)?.roleKey).toBe('org_admin');
    await database.db.delete(organizations).where(eq(organizations.id, extra?.id as string));
    expect((await lookup.validate(token))?.memberships.map((m) => m.organization.id)).not.toContain(extra?.id);
    expect(membershipReads).toHaveLength(5);
  });
});

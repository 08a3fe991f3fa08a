import { newId } from '@svc/contracts/ids';
import { createDatabase, type Database } from '@svc/db/client';
import { memberships, users } from '@svc/db/schema/identity';
import { organizations } from '@svc/db/schema/organizations';
import { sessions } from '@svc/db/schema/sessions';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../../test/support/db.ts';
import { type EngineIdentity, PLATFORM_ORGANIZATION_SLUG, signInFromEngine } from './service.ts';

let database: Database;
const opts = { platformAdminGroup: 'platform-admins' };

beforeAll(async () => {
  database = createDatabase({ url: await createTestDatabase(), max: 10 });
});
afterAll(async () => {
  await database?.close();
});

function identity(overrides: Partial<EngineIdentity> = {}): EngineIdentity {
  const id = Math.random().toString(36).slice(2, 10);
  return { subject: `sub-${id}`, email: `User.${id}@Example.com`, emailVerified: true, name: 'Ada', groups: [], ...overrides };
}

describe('sign-in outcome (docs/authentik.md, "the platform admin group")', () => {
  it('a first sign-in creates one tenant workspace with the user as org admin; later sign-ins reuse it', async () => {
    const who = identity();
    const first = await signInFromEngine(database.db, who, opts);
    expect(first.workspace.kind).toBe('tenant');
    expect(first.isPlatformAdmin).toBe(false);
    expect(first.user.email).toBe(who.email.toLowerCase());
    const again = await signInFromEngine(database.db, who, opts);
    expect(again.workspace.id).toBe(first.workspace.id);
    const rows = await database.db.select().from(memberships).where(eq(memberships.userId, first.user.id));
    expect(rows).toEqual([expect.objectContaining({ tenantId: first.workspace.id, roleKey: 'org_admin' })]);
  });

  it('racing callbacks of one new user give exactly one user, one workspace, one membership', async () => {
    const who = identity();
    const outcomes = await Promise.all(Array.from({ length: 6 }, () => signInFromEngine(database.db, who, opts)));
    expect(new Set(outcomes.map((o) => o.user.id)).size).toBe(1);
    expect(new Set(outcomes.map((o) => o.workspace.id)).size).toBe(1);
    const userId = outcomes[0]?.user.id as string;
    expect(await database.db.select().from(memberships).where(eq(memberships.userId, userId))).toHaveLength(1);
  });

  it('racing callbacks of a known user who has no workspace yet still create exactly one', async () => {
    const who = identity();
    const userId = newId('user');
    await database.db.insert(users).values({ id: userId, engineSubject: who.subject, email: who.email.toLowerCase(), name: 'Known' });
    const outcomes = await Promise.all(Array.from({ length: 6 }, () => signInFromEngine(database.db, who, opts)));
    expect(new Set(outcomes.map((o) => o.workspace.id)).size).toBe(1);
    expect(await database.db.select().from(memberships).where(eq(memberships.userId, userId))).toHaveLength(1);
  });

  it('a platform admin group member opens the platform workspace, not a tenant one', async () => {
    const outcome = await signInFromEngine(database.db, identity({ groups: ['staff', 'platform-admins'] }), opts);
    expect(outcome.isPlatformAdmin).toBe(true);
    expect(outcome.workspace).toMatchObject({ slug: PLATFORM_ORGANIZATION_SLUG, kind: 'platform' });
    const second = await signInFromEngine(database.db, identity({ groups: ['platform-admins'] }), opts);
    expect(second.workspace.id).toBe(outcome.workspace.id);
  });

  it('leaving the platform admin group leaves the platform workspace, and ends the sessions opened as a platform admin', async () => {
    const who = identity({ groups: ['platform-admins'] });
    const admin = await signInFromEngine(database.db, who, opts);
    const platformId = admin.workspace.id;
    const at = new Date();
    const session = (isPlatformAdmin: boolean) => ({
      id: newId('session'),
      tokenHash: newId('session'),
      userId: admin.user.id,
      activeTenantId: platformId,
      isPlatformAdmin,
      expiresAt: new Date(at.getTime() + 3_600_000),
      absoluteExpiresAt: new Date(at.getTime() + 3_600_000),
    });
    const [asAdmin, asPerson] = [session(true), session(false)];
    await database.db.insert(sessions).values([asAdmin, asPerson]);

    const after = await signInFromEngine(database.db, { ...who, groups: [] }, opts);
    expect(after.isPlatformAdmin).toBe(false);
    expect(after.workspace.kind).toBe('tenant');
    const platformRows = await database.db
      .select()
      .from(memberships)
      .where(and(eq(memberships.userId, admin.user.id), eq(memberships.tenantId, platformId)));
    expect(platformRows).toEqual([]);
    const [adminSession] = await database.db.select().from(sessions).where(eq(sessions.id, asAdmin.id));
    const [personSession] = await database.db.select().from(sessions).where(eq(sessions.id, asPerson.id));
    expect(adminSession?.revokedAt).not.toBeNull();
    expect(personSession?.revokedAt).toBeNull();

    // Back in the group: back in the workspace.
    const again = await signInFromEngine(database.db, who, opts);
    expect(again.workspace.id).toBe(platformId);
  });

  it('links a pre-provisioned user by email only when the engine verified it', async () => {
    const email = `pre.${Math.random().toString(36).slice(2, 8)}@example.com`;
    const preId = newId('user');
    await database.db.insert(users).values({ id: preId, email, name: 'Pre' });
    const unverified = await signInFromEngine(database.db, identity({ email, emailVerified: false }), opts);
    expect(unverified.user.id).not.toBe(preId);
    const verified = await signInFromEngine(database.db, identity({ email, emailVerified: true }), opts);
    expect(verified.user.id).toBe(preId);
    expect(verified.user.engineSubject).toMatch(/^sub-/);
  });

  it('a suspended user cannot sign in', async () => {
    const who = identity();
    const { user } = await signInFromEngine(database.db, who, opts);
    await database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, user.id));
    await expect(signInFromEngine(database.db, who, opts)).rejects.toMatchObject({ code: 'user_suspended' });
  });

  it("never hands a new user someone else's workspace, even when its slug would match", async () => {
    const a = await signInFromEngine(database.db, identity({ email: 'same@example.com', subject: `a-${Math.random()}` }), opts);
    const b = await signInFromEngine(database.db, identity({ email: 'same@example.com', subject: `b-${Math.random()}` }), opts);
    expect(a.workspace.id).not.toBe(b.workspace.id);
    const [org] = await database.db.select().from(organizations).where(eq(organizations.id, b.workspace.id));
    expect(org?.slug).toMatch(/^same-[a-z0-9]{6}$/);
  });
});

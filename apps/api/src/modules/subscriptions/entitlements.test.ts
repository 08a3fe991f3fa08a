import { newId } from '@svc/contracts/ids';
import { createDatabase, type Database } from '@svc/db/client';
import { ensureOrganization } from '@svc/db/queries/organizations';
import { insertSubscriptionPlan, updateSubscription } from '@svc/db/queries/subscriptions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../../test/support/db.ts';
import { seedOrganization } from '../../../../../test/support/tenancy.ts';
import { entitlementsOf, featuresChange } from './entitlements.ts';

let database: Database;

beforeAll(async () => {
  database = createDatabase({ url: await createTestDatabase(), max: 2 });
});
afterAll(async () => {
  await database?.close();
});

describe('entitlementsOf (the entitlements token scope)', () => {
  it("the plan's key, the status, and its features while active or trialing; none while inactive, cancelled or expired", async () => {
    const { db } = database;
    const plan = await insertSubscriptionPlan(db, {
      id: newId('subscriptionPlan'),
      key: `pro-${Date.now()}`,
      name: 'Pro',
      seatLimit: null,
      usageLimits: { api_call: 10 },
      usageThresholds: [],
      features: ['audit_export', 'sso'],
      isDefault: false,
    });
    const org = await seedOrganization(db);
    expect(await entitlementsOf(db, org.id)).toEqual({ plan: 'free', status: 'active', features: [] });
    await updateSubscription(db, { tenantId: org.id, planId: plan?.id });
    expect(await entitlementsOf(db, org.id)).toEqual({ plan: plan?.key, status: 'active', features: ['audit_export', 'sso'] });
    await updateSubscription(db, { tenantId: org.id, status: 'trialing' });
    expect((await entitlementsOf(db, org.id))?.features).toEqual(['audit_export', 'sso']);
    for (const status of ['inactive', 'cancelled', 'expired'] as const) {
      await updateSubscription(db, { tenantId: org.id, status });
      expect(await entitlementsOf(db, org.id)).toEqual({ plan: plan?.key, status, features: [] });
    }
  });

  it('null for an organization without a subscription (the platform workspace) or none at all', async () => {
    const { db } = database;
    const platform = await ensureOrganization(db, {
      id: newId('organization'),
      slug: `platform-${Date.now()}`,
      name: 'P',
      kind: 'platform',
    });
    expect(await entitlementsOf(db, platform.id)).toBeNull();
    expect(await entitlementsOf(db, 'ten_00000000000000000000')).toBeNull();
  });
});

describe('featuresChange', () => {
  it('says what was added and removed, sorted; undefined when the set is the same', () => {
    expect(featuresChange(['sso'], ['sso'])).toBeUndefined();
    expect(featuresChange(['b', 'a'], ['a', 'b'])).toBeUndefined();
    expect(featuresChange(['sso', 'audit'], ['scim', 'sso'])).toEqual({
      before: ['audit', 'sso'],
      after: ['scim', 'sso'],
      added: ['scim'],
      removed: ['audit'],
    });
  });
});

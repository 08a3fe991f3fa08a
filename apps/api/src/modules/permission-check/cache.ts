import type { TPermissionCheckResult } from '@svc/contracts/authorization';
import { PERMISSIONS, type Permission } from '@svc/contracts/permissions';
import type { Db, Sql } from '@svc/db/client';
import { findOrganizationById, findOrganizationBySlug, type OrganizationRow } from '@svc/db/queries/organizations';
import { hasSignedInFor, productPermissionExists } from '@svc/db/queries/permission-check';
import { findMemberStanding } from '@svc/db/queries/role-grants';
import { type EntitlementTermsRow, findEntitlementTerms } from '@svc/db/queries/subscriptions';
import { isOrgAdminRole } from '../access/authorize.ts';
import { grantsOfRoleRows } from '../access/role-grants.ts';
import { APPLICATION_CHANGED_CHANNEL } from '../applications/cache.ts';

/**
 * PostgreSQL channel of access changes (migration 0024): `u:<userId>` when one of the user's
 * memberships or the user's own status changes, `*` when roles, product roles, the product's
 * permission catalog, subscriptions or plans change.
 */
export const ACCESS_CHANGED_CHANNEL = 'svc_access_changed';

/**
 * A person's standing in an organization as the check judges it, resolved once per load: the
 * role key, whether the membership and the user are both active, and what the role grants in
 * each catalog (role-grants.ts, the one rule).
 */
export type CheckStanding = {
  roleKey: string;
  /** An active membership of an active user: only then does anything count. */
  active: boolean;
  /** The role is org_admin: admin-only control-plane permissions count (authorize.ts `mayExercise`). */
  isOrgAdmin: boolean;
  control: ReadonlySet<Permission>;
  product: ReadonlySet<string>;
  /**
   * The check's answers from this standing, by permission (service.ts `judge`): the same frozen
   * object each time, so that its output check and JSON are made once (trpc/call.ts). Dropped
   * with the standing.
   */
  answers: Map<string, Readonly<TPermissionCheckResult>>;
};

const KNOWN_CONTROL: ReadonlySet<string> = new Set(PERMISSIONS);
const NONE: ReadonlySet<never> = new Set();

type Entry = { value: unknown; expiresAt: number };

/** What `peek` gives for a key not held (or expired). */
const MISS: unique symbol = Symbol('miss');

/**
 * Buckets of entries. A person's entries (standings by organization id, sign-in records) are in
 * the bucket named by their user id, so `u:<userId>` drops one bucket; the others have fixed
 * names. Two levels rather than one map of composed keys: a lookup hashes the strings it was
 * given (the request's user id, the organization's id) instead of building and hashing a new
 * key each time, which is most of what a cached check costs.
 */
const ORGANIZATION_BY_ID = 'o:i';
const ORGANIZATION_BY_SLUG = 'o:s';
const PERMISSION_NAMES = 'p';
const SUBSCRIPTION_TERMS = 't';

export class AccessCache {
  private readonly buckets = new Map<string, Map<string, Entry>>();
  private count = 0;
  private readonly inflight = new Map<string, Promise<unknown>>();
  private generation = 0;
  private readonly unlisteners: (() => Promise<void>)[] = [];

  constructor(
    private readonly db: Db,
    private readonly opts: { ttlMs: number; maxEntries?: number },
  ) {}

  /** Subscribes to both channels; resolves once listening. */
  async listen(sql: Sql): Promise<void> {
    const access = await sql.listen(
      ACCESS_CHANGED_CHANNEL,
      // Anything but a user's own change drops everything: a payload this code does not know included.
      (payload) => (payload.startsWith('u:') ? this.invalidateUser(payload.slice(2)) : this.clear()),
      () => this.clear(),
    );
    this.unlisteners.push(access.unlisten);
    const organizations = await sql.listen(
      APPLICATION_CHANGED_CHANNEL,
      // `*`: an organization changed (renamed, deleted); application ids are the application cache's.
      (payload) => {
        if (payload === '*') {
          this.clear();
        }
      },
      () => this.clear(),
    );
    this.unlisteners.push(organizations.unlisten);
  }

  async close(): Promise<void> {
    const unlisteners = this.unlisteners.splice(0);
    await Promise.all(unlisteners.map((unlisten) => unlisten()));
  }

  /** The person's standing in the organization; null when they have no membership there (or do not exist). */
  standing(tenantId: string, userId: string): Promise<CheckStanding | null> {
    return this.get(
      userId,
      tenantId,
      async () => {
        const row = await findMemberStanding(this.db, { tenantId, userId });
        if (!row) {
          return null;
        }
        const grants = grantsOfRoleRows(row.roleKey, row);
        return {
          roleKey: row.roleKey,
          active: row.membershipStatus === 'active' && row.userStatus === 'active',
          isOrgAdmin: isOrgAdminRole(row.roleKey),
          control: grants ? new Set(grants.control.filter((p) => KNOWN_CONTROL.has(p))) : NONE,
          product: grants ? new Set(grants.product) : NONE,
          answers: new Map(),
        } satisfies CheckStanding;
      },
      true,
    );
  }

  /** The organization by id or by slug; null when none (not stored: it may be created). */
  organization(ref: { id: string } | { slug: string }): Promise<OrganizationRow | null> {
    return 'id' in ref
      ? this.get(ORGANIZATION_BY_ID, ref.id, async () => (await findOrganizationById(this.db, ref.id)) ?? null, false)
      : this.get(ORGANIZATION_BY_SLUG, ref.slug, async () => (await findOrganizationBySlug(this.db, ref.slug)) ?? null, false);
  }

  /** Some API resource declares this product permission. */
  productPermissionExists(name: string): Promise<boolean> {
    return this.get(PERMISSION_NAMES, name, () => productPermissionExists(this.db, name), true);
  }

  /** The organization's subscription terms (plan, status, features, usage limits); null without a subscription. */
  subscriptionTerms(tenantId: string): Promise<EntitlementTermsRow | null> {
    return this.get(SUBSCRIPTION_TERMS, tenantId, async () => (await findEntitlementTerms(this.db, tenantId)) ?? null, true);
  }

  /** The person has signed in to the application for the organization (queries/permission-check.ts); only true is stored. */
  hasSignedInFor(opts: { applicationId: string; userId: string; organizationId: string }): Promise<boolean> {
    return this.get(opts.userId, `v:${opts.applicationId}:${opts.organizationId}`, () => hasSignedInFor(this.db, opts), false);
  }

  /**
   * The answers above as held now, without loading: undefined when not held (the caller then
   * loads through the methods above). The check answers from these synchronously when everything
   * it needs is held, which is the steady state, and pays for no promise.
   */
  peekStanding(tenantId: string, userId: string, now = Date.now()): CheckStanding | null | undefined {
    const value = this.peek(userId, tenantId, now);
    return value === MISS ? undefined : (value as CheckStanding | null);
  }

  peekOrganization(ref: { id: string } | { slug: string }, now = Date.now()): OrganizationRow | undefined {
    const value = 'id' in ref ? this.peek(ORGANIZATION_BY_ID, ref.id, now) : this.peek(ORGANIZATION_BY_SLUG, ref.slug, now);
    return value === MISS ? undefined : (value as OrganizationRow);
  }

  peekProductPermissionExists(name: string, now = Date.now()): boolean | undefined {
    const value = this.peek(PERMISSION_NAMES, name, now);
    return value === MISS ? undefined : (value as boolean);
  }

  /** True when held; undefined otherwise (only true is ever stored). */
  peekHasSignedInFor(opts: { applicationId: string; userId: string; organizationId: string }, now = Date.now()): true | undefined {
    return this.peek(opts.userId, `v:${opts.applicationId}:${opts.organizationId}`, now) === true ? true : undefined;
  }

  invalidateUser(userId: string): void {
    this.generation++;
    // A load already under way may have read the old row: later callers must not share it.
    this.inflight.clear();
    const bucket = this.buckets.get(userId);
    if (bucket) {
      this.count -= bucket.size;
      this.buckets.delete(userId);
    }
  }

  clear(): void {
    this.generation++;
    this.inflight.clear();
    this.buckets.clear();
    this.count = 0;
  }

  /**
   * Changes with every drop (a NOTIFY of the access channel, `*` or a user's): an answer derived
   * elsewhere from the same facts (the machine-token meter's subscription judgement) is stale once
   * this differs from the one it was made under.
   */
  get changes(): number {
    return this.generation;
  }

  /** Entries held now (tests, metrics). */
  get size(): number {
    return this.count;
  }

  private peek(bucket: string, key: string, now: number): unknown {
    const hit = this.buckets.get(bucket)?.get(key);
    return hit && hit.expiresAt > now ? hit.value : MISS;
  }

  /**
   * The cached value of `key` in `bucket`, else `load()`'s (one load per key at a time).
   * `storeNull: false` keeps null and false answers out of the cache.
   */
  private get<V>(bucket: string, key: string, load: () => Promise<V>, storeNull: boolean): Promise<V> {
    const hit = this.peek(bucket, key, Date.now());
    if (hit !== MISS) {
      return Promise.resolve(hit as V);
    }
    const flight = `${bucket}\u0000${key}`;
    const pending = this.inflight.get(flight);
    if (pending) {
      return pending as Promise<V>;
    }
    const generation = this.generation;
    const promise = load()
      .then((value) => {
        if (generation === this.generation && (storeNull || (value !== null && value !== false))) {
          this.store(bucket, key, value);
        }
        return value;
      })
      .finally(() => {
        if (this.inflight.get(flight) === promise) {
          this.inflight.delete(flight);
        }
      });
    this.inflight.set(flight, promise);
    return promise;
  }

  private store(bucket: string, key: string, value: unknown): void {
    let entries = this.buckets.get(bucket);
    if (entries?.has(key)) {
      entries.delete(key);
      this.count--;
    }
    if (this.count >= (this.opts.maxEntries ?? 100_000)) {
      this.evictOldest();
      entries = this.buckets.get(bucket);
    }
    if (!entries) {
      entries = new Map();
      this.buckets.set(bucket, entries);
    }
    entries.set(key, { value, expiresAt: Date.now() + this.opts.ttlMs });
    this.count++;
  }

  /** Maps iterate in insertion order: the oldest bucket's oldest entry goes. */
  private evictOldest(): void {
    const oldest = this.buckets.entries().next().value;
    if (!oldest) {
      return;
    }
    const [name, entries] = oldest;
    const first = entries.keys().next().value;
    if (first !== undefined) {
      entries.delete(first);
      this.count--;
    }
    if (entries.size === 0) {
      this.buckets.delete(name);
    }
  }
}

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
};

const KNOWN_CONTROL: ReadonlySet<string> = new Set(PERMISSIONS);
const NONE: ReadonlySet<never> = new Set();

type Entry = { value: unknown; expiresAt: number; userId: string | undefined };

/**
 * Per-process cache of what the permission check reads (POST /v1/permissions/check): a person's
 * standing per (organization, user), organizations by id and slug, whether a product permission
 * exists, an organization's subscription terms, and an application's sign-in records.
 *
 * Correctness across processes, as for the application cache (applications/cache.ts): every
 * change of a membership, a user's status, a role, a product role, the permission catalog, a
 * subscription or a plan NOTIFYs `svc_access_changed` in its transaction, from whichever process
 * or tool made it; each process drops the user's entries (`u:<userId>`) or everything (`*`) when
 * it hears it, within milliseconds of the commit. An organization's rename or deletion is heard on
 * the application channel (`*` there). When a LISTEN connection is (re)established everything is
 * dropped, since notifications may have been missed meanwhile. A load racing an invalidation is
 * not stored (generation check), so a row read before the NOTIFY arrived never outlives it. The
 * TTL is only a safety net; the size is bounded (the oldest entry goes first).
 *
 * Only answers a later insert would change without a notification are never stored negative:
 * an organization not found (one may be created with that slug), and an application sign-in not
 * found (the person may sign in next).
 */
export class AccessCache {
  private readonly entries = new Map<string, Entry>();
  private readonly keysByUser = new Map<string, Set<string>>();
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
      `s:${tenantId}:${userId}`,
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
        } satisfies CheckStanding;
      },
      { userId, storeNull: true },
    );
  }

  /** The organization by id or by slug; null when none (not stored: it may be created). */
  organization(ref: { id: string } | { slug: string }): Promise<OrganizationRow | null> {
    return 'id' in ref
      ? this.get(`o:i:${ref.id}`, async () => (await findOrganizationById(this.db, ref.id)) ?? null, { storeNull: false })
      : this.get(`o:s:${ref.slug}`, async () => (await findOrganizationBySlug(this.db, ref.slug)) ?? null, { storeNull: false });
  }

  /** Some API resource declares this product permission. */
  productPermissionExists(name: string): Promise<boolean> {
    return this.get(`p:${name}`, () => productPermissionExists(this.db, name), { storeNull: true });
  }

  /** The organization's subscription terms (plan, status, features, usage limits); null without a subscription. */
  subscriptionTerms(tenantId: string): Promise<EntitlementTermsRow | null> {
    return this.get(`t:${tenantId}`, async () => (await findEntitlementTerms(this.db, tenantId)) ?? null, { storeNull: true });
  }

  /** The person has signed in to the application for the organization (queries/permission-check.ts); only true is stored. */
  hasSignedInFor(opts: { applicationId: string; userId: string; organizationId: string }): Promise<boolean> {
    return this.get(`v:${opts.applicationId}:${opts.userId}:${opts.organizationId}`, () => hasSignedInFor(this.db, opts), {
      userId: opts.userId,
      storeNull: false,
    });
  }

  invalidateUser(userId: string): void {
    this.generation++;
    // A load already under way may have read the old row: later callers must not share it.
    this.inflight.clear();
    const keys = this.keysByUser.get(userId);
    if (keys) {
      for (const key of keys) {
        this.entries.delete(key);
      }
      this.keysByUser.delete(userId);
    }
  }

  clear(): void {
    this.generation++;
    this.inflight.clear();
    this.entries.clear();
    this.keysByUser.clear();
  }

  /** Entries held now (tests, metrics). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * The cached value of `key`, else `load()`'s (one load per key at a time). `storeNull: false`
   * keeps null and false answers out of the cache.
   */
  private get<V>(key: string, load: () => Promise<V>, opts: { userId?: string; storeNull: boolean }): Promise<V> {
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > Date.now()) {
      return Promise.resolve(hit.value as V);
    }
    const pending = this.inflight.get(key);
    if (pending) {
      return pending as Promise<V>;
    }
    const generation = this.generation;
    const promise = load()
      .then((value) => {
        if (generation === this.generation && (opts.storeNull || (value !== null && value !== false))) {
          this.store(key, value, opts.userId);
        }
        return value;
      })
      .finally(() => {
        if (this.inflight.get(key) === promise) {
          this.inflight.delete(key);
        }
      });
    this.inflight.set(key, promise);
    return promise;
  }

  private store(key: string, value: unknown, userId: string | undefined): void {
    const max = this.opts.maxEntries ?? 100_000;
    if (this.entries.size >= max && !this.entries.has(key)) {
      // Maps iterate in insertion order: drop the oldest entry.
      const oldest = this.entries.entries().next().value;
      if (oldest !== undefined) {
        const [oldestKey, entry] = oldest;
        this.entries.delete(oldestKey);
        const keys = entry.userId === undefined ? undefined : this.keysByUser.get(entry.userId);
        keys?.delete(oldestKey);
        if (keys?.size === 0) {
          this.keysByUser.delete(entry.userId as string);
        }
      }
    }
    // Re-inserted, so that it counts as the newest.
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt: Date.now() + this.opts.ttlMs, userId });
    if (userId !== undefined) {
      let keys = this.keysByUser.get(userId);
      if (!keys) {
        keys = new Set();
        this.keysByUser.set(userId, keys);
      }
      keys.add(key);
    }
  }
}

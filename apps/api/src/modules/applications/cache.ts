import type { Db, Sql } from '@svc/db/client';
import {
  type ApplicationWithOrganization,
  findApplicationByPublishableKey,
  findApplicationBySecretKeyHash,
  findApplicationWithOrganizationById,
} from '@svc/db/queries/applications';

type Entry = { value: ApplicationWithOrganization | null; expiresAt: number };

/** PostgreSQL channel the applications trigger notifies with the changed application's id. */
export const APPLICATION_CHANGED_CHANNEL = 'svc_application_changed';

/**
 * Per-process cache of key -> application for the hot public and backend routes.
 *
 * Correctness across processes: every UPDATE or DELETE of an application row (from any API
 * process or the CLI) fires a NOTIFY; each process drops that application's entries when it
 * hears it, so a disable or a rotation takes effect everywhere within milliseconds. When the
 * LISTEN connection is (re)established the whole cache is dropped, since notifications may have
 * been missed meanwhile. The TTL is only a safety net.
 *
 * A lookup racing an invalidation is not cached (generation check), so a stale row read before
 * the NOTIFY arrived can never outlive it.
 */
export class ApplicationCache {
  private readonly entries = new Map<string, Entry>();
  private readonly keysByApplication = new Map<string, Set<string>>();
  private readonly inflight = new Map<string, Promise<ApplicationWithOrganization | null>>();
  private generation = 0;
  private unlisten: (() => Promise<void>) | undefined;

  constructor(
    private readonly db: Db,
    private readonly opts: { ttlMs: number; maxEntries?: number },
  ) {}

  /** Subscribes to change notifications; resolves once listening. */
  async listen(sql: Sql): Promise<void> {
    const sub = await sql.listen(
      APPLICATION_CHANGED_CHANNEL,
      // `*` (an organization changed: renames touch every application of it) drops everything.
      (applicationId) => (applicationId === '*' ? this.clear() : this.invalidateApplication(applicationId)),
      () => this.clear(),
    );
    this.unlisten = sub.unlisten;
  }

  async close(): Promise<void> {
    await this.unlisten?.();
  }

  byPublishableKey(publishableKey: string): Promise<ApplicationWithOrganization | null> {
    return this.get(`pk:${publishableKey}`, () => findApplicationByPublishableKey(this.db, publishableKey));
  }

  bySecretKeyHash(secretKeyHash: string): Promise<ApplicationWithOrganization | null> {
    return this.get(`sk:${secretKeyHash}`, () => findApplicationBySecretKeyHash(this.db, secretKeyHash));
  }

  /** By application id: the OpenID Provider's clients (client_id is the application id). */
  byId(applicationId: string): Promise<ApplicationWithOrganization | null> {
    return this.get(`id:${applicationId}`, () => findApplicationWithOrganizationById(this.db, applicationId));
  }

  /**
   * The cached answer for a secret-key hash without loading it: the application, null for a key
   * known not to exist, undefined when this process has not looked it up lately.
   */
  peekBySecretKeyHash(secretKeyHash: string): ApplicationWithOrganization | null | undefined {
    const hit = this.entries.get(`sk:${secretKeyHash}`);
    return hit && hit.expiresAt > Date.now() ? hit.value : undefined;
  }

  /** The keyless-development application; `load` finds or creates it. */
  keyless(load: () => Promise<ApplicationWithOrganization>): Promise<ApplicationWithOrganization | null> {
    return this.get('keyless', load);
  }

  invalidateApplication(applicationId: string): void {
    this.generation++;
    // A load already under way may have read the old row: later callers must not share it.
    this.inflight.clear();
    const keys = this.keysByApplication.get(applicationId);
    if (keys) {
      for (const key of keys) {
        this.entries.delete(key);
      }
      this.keysByApplication.delete(applicationId);
    }
  }

  clear(): void {
    this.generation++;
    this.inflight.clear();
    this.entries.clear();
    this.keysByApplication.clear();
  }

  private async get(
    key: string,
    load: () => Promise<ApplicationWithOrganization | undefined>,
  ): Promise<ApplicationWithOrganization | null> {
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > Date.now()) {
      return hit.value;
    }
    const pending = this.inflight.get(key);
    if (pending) {
      return pending;
    }
    const generation = this.generation;
    const promise = load()
      .then((row) => {
        const value = row ?? null;
        if (generation === this.generation) {
          this.store(key, value);
        }
        return value;
      })
      .finally(() => this.inflight.delete(key));
    this.inflight.set(key, promise);
    return promise;
  }

  private store(key: string, value: ApplicationWithOrganization | null): void {
    const max = this.opts.maxEntries ?? 50_000;
    if (this.entries.size >= max) {
      // Maps iterate in insertion order: drop the oldest entry.
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) {
        this.entries.delete(oldest);
      }
    }
    this.entries.set(key, { value, expiresAt: Date.now() + this.opts.ttlMs });
    if (value) {
      const id = value.application.id;
      let keys = this.keysByApplication.get(id);
      if (!keys) {
        keys = new Set();
        this.keysByApplication.set(id, keys);
      }
      keys.add(key);
    }
  }
}

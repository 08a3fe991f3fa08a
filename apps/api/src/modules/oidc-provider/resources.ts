import type { Db, Sql } from '@svc/db/client';
import { findTokenResource, type TokenResource } from '@svc/db/queries/token-resources';

/** PostgreSQL channel of access changes (migration 0024): `*` when the catalog (among others) changed. */
export const ACCESS_CHANGED_CHANNEL = 'svc_access_changed';

type Entry = { value: TokenResource | null; expiresAt: number };

/**
 * The product's API resources by identifier, as the OpenID Provider resolves a `resource`
 * parameter (RFC 8707) on every authorization and token request that names one. Kept per process:
 * any change to the catalog NOTIFYs `*` on ACCESS_CHANGED_CHANNEL and every process drops its
 * entries (and all of them when its LISTEN connection comes back, since a change may have been
 * missed); a read racing a change is not kept (generation check). The TTL is a safety net.
 */
export class TokenResources {
  private readonly entries = new Map<string, Entry>();
  private generation = 0;
  private unlisten: (() => Promise<void>) | undefined;

  constructor(
    private readonly db: Db,
    private readonly opts: { ttlMs: number; maxEntries: number } = { ttlMs: 30_000, maxEntries: 1000 },
    /** Resources svc registers itself (its own MCP server, modules/mcp/resource.ts), by identifier. */
    private readonly builtIn: ReadonlyMap<string, TokenResource> = new Map(),
  ) {}

  async listen(sql: Sql): Promise<void> {
    const sub = await sql.listen(
      ACCESS_CHANGED_CHANNEL,
      (payload) => {
        if (payload === '*') {
          this.clear();
        }
      },
      () => this.clear(),
    );
    this.unlisten = sub.unlisten;
  }

  async close(): Promise<void> {
    await this.unlisten?.();
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  /** The resource named `identifier`, or null when the product has none. */
  async byIdentifier(identifier: string): Promise<TokenResource | null> {
    const own = this.builtIn.get(identifier);
    if (own) {
      return own;
    }
    const hit = this.entries.get(identifier);
    if (hit && hit.expiresAt > Date.now()) {
      return hit.value;
    }
    const generation = this.generation;
    const value = (await findTokenResource(this.db, identifier)) ?? null;
    if (generation === this.generation) {
      if (this.entries.size >= this.opts.maxEntries) {
        this.entries.clear();
      }
      this.entries.set(identifier, { value, expiresAt: Date.now() + this.opts.ttlMs });
    }
    return value;
  }
}

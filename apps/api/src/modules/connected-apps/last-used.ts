import type { DbOrTx } from '@svc/db/client';
import { noteThirdPartyGrantUsed } from '@svc/db/queries/connected-apps';

/** How often one grant's last use is written at most, per process (and in the statement, across them). */
export const GRANT_USE_RESOLUTION_MS = 60_000;

/**
 * When each third-party grant was last used (a token issued under it, a call to svc's MCP tools
 * with one of its tokens), for the Connected apps list (docs/oidc.md "Connected apps"). Cheap on
 * purpose: a grant already noted in this process within the last minute costs nothing, and the
 * statement itself leaves a row alone that another process wrote within the minute, so an agent
 * calling many times a second writes about once a minute.
 */
export class GrantUse {
  readonly #noted = new Map<string, number>();

  constructor(
    private readonly db: DbOrTx,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  /**
   * Notes a use of `grantId` now, and of its client when that is a registered client (`dcr_...`,
   * whose last use decides when it is deleted: oidc-provider/registration.ts); never delays nor
   * fails the caller.
   */
  note(grantId: string | undefined, registeredClientId?: string, now = Date.now()): void {
    if (!grantId) {
      return;
    }
    const last = this.#noted.get(grantId);
    if (last !== undefined && now - last < GRANT_USE_RESOLUTION_MS) {
      return;
    }
    if (this.#noted.size >= 10_000) {
      this.#noted.clear();
    }
    this.#noted.set(grantId, now);
    noteThirdPartyGrantUsed(this.db, { grantId, resolutionMs: GRANT_USE_RESOLUTION_MS, registeredClientId }).catch((error: unknown) => {
      // Tried again on the next use rather than a minute later.
      this.#noted.delete(grantId);
      this.onError(error);
    });
  }
}

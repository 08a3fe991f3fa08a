import type { DbOrTx } from '@svc/db/client';
import { recordApiKeysUsed } from '@svc/db/queries/api-keys';

/**
 * Keeps tenant API keys' last-used times without a write per request: uses are noted in memory
 * and written in one statement per interval (and at shutdown).
 */
export class ApiKeyUsage {
  #pending = new Map<string, Date>();
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: DbOrTx,
    private readonly intervalMs = 60_000,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  note(keyId: string, at = new Date()): void {
    this.#pending.set(keyId, at);
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      this.flush().catch(this.onError);
    }, this.intervalMs).unref();
  }

  async flush(): Promise<void> {
    const batch = this.#pending;
    this.#pending = new Map();
    await recordApiKeysUsed(this.db, batch);
  }

  async close(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.flush();
  }
}

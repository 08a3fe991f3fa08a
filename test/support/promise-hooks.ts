import { executionAsyncResource } from 'node:async_hooks';

/**
 * True while promise hooks run in this process (an AsyncLocalStorage in use turns them on): a
 * promise continuation then executes with its own promise as the async resource.
 */
export function promiseHooksOn(): Promise<boolean> {
  return Promise.resolve().then(() => executionAsyncResource() instanceof Promise);
}

/** oidc-provider's request storage (`Provider.ctx` reads it); the package ships no types for it. */
declare module 'oidc-provider/lib/helpers/als.js' {
  import type { AsyncLocalStorage } from 'node:async_hooks';

  const als: AsyncLocalStorage<unknown>;
  export default als;
}

/**
 * oidc-provider prints two warnings that are expected for a development engine: Node 20 is not
 * its preferred runtime (it works), and the in-memory adapter (this engine is in-memory on
 * purpose). Printed on every `svc serve` they read like problems, and they break svc's one-line
 * startup errors, so exactly these two are muted while the module loads and the provider is
 * built. Every other warning still prints.
 */
const EXPECTED = ['oidc-provider WARNING: Unsupported runtime', 'oidc-provider WARNING: a quick start development-only in-memory adapter'];

export async function quietly<T>(fn: () => T | Promise<T>): Promise<T> {
  const original = console.warn;
  console.warn = (...args: unknown[]) => {
    const text = typeof args[0] === 'string' ? args[0] : '';
    if (!EXPECTED.some((prefix) => text.includes(prefix))) {
      original(...args);
    }
  };
  try {
    return await fn();
  } finally {
    console.warn = original;
  }
}

import type { IncomingMessage } from 'node:http';
import proxyaddr from 'proxy-addr';

/** Whether the hop `i` away (0: the peer) at `addr` is a proxy TRUST_PROXY trusts. */
export type ProxyTrust = (addr: string, i: number) => boolean;

/**
 * TRUST_PROXY as a trust function (same semantics as Express's `trust proxy`), or undefined when
 * no proxy is trusted (unset, empty or `false`).
 */
export function proxyTrustOf(trustProxy: string | undefined): ProxyTrust | undefined {
  if (trustProxy === undefined || trustProxy === '' || trustProxy === 'false') {
    return undefined;
  }
  if (trustProxy === 'true') {
    return () => true;
  }
  if (/^\d+$/.test(trustProxy)) {
    const hops = Number(trustProxy);
    return (_addr, i) => i < hops;
  }
  return proxyaddr.compile(trustProxy.split(',').map((s) => s.trim()));
}

/**
 * The client address under the TRUST_PROXY setting (same semantics as Express's `trust proxy`):
 * unset trusts no proxy, so X-Forwarded-For cannot be forged to dodge per-IP rate limits.
 */
export function clientIpResolver(trustProxy: string | undefined): (req: IncomingMessage) => string {
  const trust = proxyTrustOf(trustProxy);
  if (!trust) {
    // The peer of a keep-alive connection never changes; remoteAddress asks the OS each time.
    const byConnection = new WeakMap<object, string>();
    return (req) => {
      let ip = byConnection.get(req.socket);
      if (ip === undefined) {
        ip = req.socket.remoteAddress ?? 'unknown';
        byConnection.set(req.socket, ip);
      }
      return ip;
    };
  }
  return (req) => proxyaddr(req, trust);
}

import type { IncomingMessage } from 'node:http';
import proxyaddr from 'proxy-addr';

/**
 * The client address under the TRUST_PROXY setting (same semantics as Express's `trust proxy`):
 * unset trusts no proxy, so X-Forwarded-For cannot be forged to dodge per-IP rate limits.
 */
export function clientIpResolver(trustProxy: string | undefined): (req: IncomingMessage) => string {
  let trust: (addr: string, i: number) => boolean;
  if (trustProxy === undefined || trustProxy === '' || trustProxy === 'false') {
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
  if (trustProxy === 'true') {
    trust = () => true;
  } else if (/^\d+$/.test(trustProxy)) {
    const hops = Number(trustProxy);
    trust = (_addr, i) => i < hops;
  } else {
    trust = proxyaddr.compile(trustProxy.split(',').map((s) => s.trim()));
  }
  return (req) => proxyaddr(req, trust);
}

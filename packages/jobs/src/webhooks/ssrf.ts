import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * The outbound-webhook address rules (ARCHITECTURE.md section 7). A webhook URL is http(s)
 * without credentials, and every address its host resolves to must be public: private,
 * loopback, link-local, metadata, multicast and reserved ranges are refused. The check is made
 * when an endpoint is saved and again, on the addresses actually connected to, at every delivery
 * (the guarded lookup below), so DNS rebinding after the save gains nothing.
 *
 * WEBHOOK_ALLOW_PRIVATE lets loopback and private networks through for local development and
 * tests; link-local and cloud metadata addresses stay refused even then.
 */

/** Always refused: link-local (169.254.169.254 and fd00:ec2::254 metadata included), unspecified, multicast, reserved. */
const ALWAYS = new BlockList();
ALWAYS.addSubnet('0.0.0.0', 8, 'ipv4');
ALWAYS.addSubnet('169.254.0.0', 16, 'ipv4');
ALWAYS.addSubnet('224.0.0.0', 4, 'ipv4');
ALWAYS.addSubnet('240.0.0.0', 4, 'ipv4');
ALWAYS.addAddress('::', 'ipv6');
ALWAYS.addSubnet('fe80::', 10, 'ipv6');
ALWAYS.addSubnet('ff00::', 8, 'ipv6');
ALWAYS.addAddress('fd00:ec2::254', 'ipv6');

/** Refused unless WEBHOOK_ALLOW_PRIVATE: loopback, private, shared and documentation ranges. */
const PRIVATE = new BlockList();
PRIVATE.addSubnet('127.0.0.0', 8, 'ipv4');
PRIVATE.addSubnet('10.0.0.0', 8, 'ipv4');
PRIVATE.addSubnet('100.64.0.0', 10, 'ipv4');
PRIVATE.addSubnet('172.16.0.0', 12, 'ipv4');
PRIVATE.addSubnet('192.0.0.0', 24, 'ipv4');
PRIVATE.addSubnet('192.0.2.0', 24, 'ipv4');
PRIVATE.addSubnet('192.168.0.0', 16, 'ipv4');
PRIVATE.addSubnet('198.18.0.0', 15, 'ipv4');
PRIVATE.addSubnet('198.51.100.0', 24, 'ipv4');
PRIVATE.addSubnet('203.0.113.0', 24, 'ipv4');
PRIVATE.addAddress('::1', 'ipv6');
PRIVATE.addSubnet('fc00::', 7, 'ipv6');
PRIVATE.addSubnet('64:ff9b::', 96, 'ipv6');
PRIVATE.addSubnet('64:ff9b:1::', 48, 'ipv6');
PRIVATE.addSubnet('100::', 64, 'ipv6');
PRIVATE.addSubnet('2001:db8::', 32, 'ipv6');

export type AddressPolicy = { allowPrivate: boolean };

/** Whether svc may connect to this IP address (v4, v6, or v4-mapped v6). */
export function isAddressAllowed(address: string, policy: AddressPolicy): boolean {
  const family = isIP(address);
  if (family === 0) {
    return false;
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (ALWAYS.check(address, type)) {
    return false;
  }
  return policy.allowPrivate || !PRIVATE.check(address, type);
}

export type UrlProblem = { code: 'webhook_url_invalid' | 'webhook_url_not_allowed'; message: string };

/** The URL's host without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/** Shape rules only (no DNS): http(s), absolute, no credentials, no fragment, at most 2048 characters. */
export function checkWebhookUrlShape(raw: string): { url: URL } | { problem: UrlProblem } {
  if (raw.length > 2048) {
    return { problem: { code: 'webhook_url_invalid', message: 'the URL is longer than 2048 characters' } };
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { problem: { code: 'webhook_url_invalid', message: 'the URL is not a valid absolute URL' } };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return { problem: { code: 'webhook_url_invalid', message: 'the URL must use http or https' } };
  }
  if (url.username || url.password) {
    return { problem: { code: 'webhook_url_invalid', message: 'the URL must not carry credentials' } };
  }
  if (url.hash) {
    return { problem: { code: 'webhook_url_invalid', message: 'the URL must not have a fragment' } };
  }
  if (!url.hostname) {
    return { problem: { code: 'webhook_url_invalid', message: 'the URL has no host' } };
  }
  return { url };
}

function lookupAll(host: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(host, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });
}

/**
 * The full check made when an endpoint is saved: shape, then every address the host resolves
 * to. A host that does not resolve is refused too (the receiver must exist to be registered).
 */
export async function checkWebhookUrl(raw: string, policy: AddressPolicy): Promise<{ url: URL } | { problem: UrlProblem }> {
  const shape = checkWebhookUrlShape(raw);
  if ('problem' in shape) {
    return shape;
  }
  const host = hostOf(shape.url);
  let addresses: string[];
  if (isIP(host)) {
    addresses = [host];
  } else {
    try {
      addresses = (await lookupAll(host)).map((a) => a.address);
    } catch {
      return { problem: { code: 'webhook_url_invalid', message: `the host ${host} does not resolve` } };
    }
  }
  if (addresses.length === 0 || !addresses.every((a) => isAddressAllowed(a, policy))) {
    return {
      problem: {
        code: 'webhook_url_not_allowed',
        message: 'the URL resolves to a private, loopback, link-local or reserved address; webhooks go to public addresses only',
      },
    };
  }
  return { url: shape.url };
}

/** Raised by the guarded lookup: the connection is never opened. */
export class AddressNotAllowedError extends Error {
  override name = 'AddressNotAllowedError';
  readonly code = 'EADDRNOTALLOWED';
}

/**
 * A `lookup` for http.request / net.connect that resolves the host and refuses the connection
 * when any address it resolves to is not allowed (fail closed on mixed answers), so the
 * connection goes to an address that was checked, never to one resolved again later. Node does
 * not call `lookup` for IP literals: callers check those with isAddressAllowed first.
 */
export function guardedLookup(policy: AddressPolicy): LookupFunction {
  return (hostname, options, callback) => {
    lookupAll(hostname).then(
      (addresses) => {
        const family = typeof options === 'object' && options ? options.family : undefined;
        const usable = addresses.filter((a) => !family || a.family === family);
        if (usable.length === 0) {
          callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 4);
          return;
        }
        if (!addresses.every((a) => isAddressAllowed(a.address, policy))) {
          callback(new AddressNotAllowedError(`${hostname} resolves to an address webhooks may not reach`), '', 4);
          return;
        }
        const wantsAll = typeof options === 'object' && options && (options as { all?: boolean }).all;
        if (wantsAll) {
          (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
          return;
        }
        const first = usable[0] as LookupAddress;
        callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 4),
    );
  };
}

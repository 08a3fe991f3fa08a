import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * The outbound-webhook address rules (docs/api.md, "Webhooks"), for every URL svc POSTs to on
 * someone else's say-so: webhook endpoints and applications' back-channel logout URLs (both sent
 * by the webhook sender). A URL is http(s) without credentials, and every address its host
 * resolves to must be public: every range of the IANA IPv4 and IPv6 special-purpose address
 * registries is refused, and so is IPv6 outside global unicast (2000::/3); known cloud metadata
 * host names are refused by name. The check is made when the URL is saved and again, on the
 * addresses actually connected to, at every delivery (the guarded lookup below), so DNS
 * rebinding after the save gains nothing.
 *
 * WEBHOOK_ALLOW_PRIVATE lets loopback and private networks through for local development and
 * tests; link-local and cloud metadata addresses stay refused even then.
 */

/**
 * What a range means for a webhook:
 * - `always`: never a receiver (unspecified, link-local, metadata, multicast, reserved, anycast
 *   infrastructure, deprecated forms), refused even with WEBHOOK_ALLOW_PRIVATE;
 * - `private`: loopback, private, shared and documentation networks a development setup may
 *   host, refused unless WEBHOOK_ALLOW_PRIVATE;
 * - `embedded`: an IPv6 form that carries an IPv4 address the packets end up at (mapped,
 *   translated, NAT64, 6to4): the embedded IPv4 address is checked instead, by this same table.
 */
export type RangePolicy = 'always' | 'private' | 'embedded';

export type SpecialRange = {
  /** CIDR notation. */
  range: string;
  name: string;
  /** Why a webhook may not go there (or, for `embedded`, where the embedded address sits). */
  reason: string;
  policy: RangePolicy;
};

/**
 * The one table the check reads. The most specific range containing an address decides (so
 * `::1/128` is loopback although it also lies in `::/96`, and the EC2 metadata address is
 * refused although it lies in the private `fc00::/7`).
 */
export const SPECIAL_RANGES: readonly SpecialRange[] = [
  // IANA IPv4 Special-Purpose Address Registry.
  { range: '0.0.0.0/8', name: 'this network', reason: 'RFC 791: 0.0.0.0 reaches the local host on most systems', policy: 'always' },
  { range: '10.0.0.0/8', name: 'private-use', reason: 'RFC 1918 private network', policy: 'private' },
  { range: '100.64.0.0/10', name: 'shared address space', reason: 'RFC 6598 carrier-grade NAT, inside the provider', policy: 'private' },
  { range: '127.0.0.0/8', name: 'loopback', reason: 'RFC 1122: svc itself', policy: 'private' },
  { range: '169.254.0.0/16', name: 'link-local', reason: 'RFC 3927; 169.254.169.254 is the cloud metadata service', policy: 'always' },
  { range: '172.16.0.0/12', name: 'private-use', reason: 'RFC 1918 private network', policy: 'private' },
  {
    range: '192.0.0.0/24',
    name: 'IETF protocol assignments',
    reason: 'RFC 6890 (DS-Lite, NAT64 discovery, PCP, TURN anycast)',
    policy: 'private',
  },
  { range: '192.0.2.0/24', name: 'documentation (TEST-NET-1)', reason: 'RFC 5737: never routed', policy: 'private' },
  { range: '192.31.196.0/24', name: 'AS112-v4', reason: 'RFC 7535 DNS sink anycast, no receivers', policy: 'always' },
  { range: '192.52.193.0/24', name: 'AMT', reason: 'RFC 7450 multicast relay anycast', policy: 'always' },
  { range: '192.88.99.0/24', name: '6to4 relay anycast', reason: 'RFC 7526: deprecated relay anycast', policy: 'always' },
  { range: '192.168.0.0/16', name: 'private-use', reason: 'RFC 1918 private network', policy: 'private' },
  { range: '192.175.48.0/24', name: 'AS112 direct delegation', reason: 'RFC 7534 DNS sink anycast, no receivers', policy: 'always' },
  { range: '198.18.0.0/15', name: 'benchmarking', reason: 'RFC 2544: lab networks only', policy: 'private' },
  { range: '198.51.100.0/24', name: 'documentation (TEST-NET-2)', reason: 'RFC 5737: never routed', policy: 'private' },
  { range: '203.0.113.0/24', name: 'documentation (TEST-NET-3)', reason: 'RFC 5737: never routed', policy: 'private' },
  { range: '224.0.0.0/4', name: 'multicast', reason: 'RFC 5771: not a single receiver', policy: 'always' },
  { range: '240.0.0.0/4', name: 'reserved', reason: 'RFC 1112: reserved for future use', policy: 'always' },
  { range: '255.255.255.255/32', name: 'limited broadcast', reason: 'RFC 919: every host on the local link', policy: 'always' },

  // IANA IPv6 Special-Purpose Address Registry, and the deprecated forms that embed IPv4.
  { range: '::/128', name: 'unspecified', reason: 'RFC 4291: reaches the local host on most systems', policy: 'always' },
  { range: '::1/128', name: 'loopback', reason: 'RFC 4291: svc itself', policy: 'private' },
  { range: '::/96', name: 'IPv4-compatible', reason: 'RFC 4291 2.5.5.1: deprecated, no legitimate receiver', policy: 'always' },
  {
    range: '::ffff:0:0/96',
    name: 'IPv4-mapped',
    reason: 'RFC 4291: the socket connects to the IPv4 address in the low 32 bits',
    policy: 'embedded',
  },
  {
    range: '::ffff:0:0:0/96',
    name: 'IPv4-translated',
    reason: 'RFC 2765 SIIT: translated to the IPv4 address in the low 32 bits',
    policy: 'embedded',
  },
  {
    range: '64:ff9b::/96',
    name: 'NAT64 well-known prefix',
    reason: 'RFC 6052: translated to the IPv4 address in the low 32 bits',
    policy: 'embedded',
  },
  {
    range: '64:ff9b:1::/48',
    name: 'local-use NAT64',
    reason: 'RFC 8215: network-specific translation to any IPv4 address',
    policy: 'always',
  },
  { range: '100::/64', name: 'discard-only', reason: 'RFC 6666: blackholed', policy: 'always' },
  { range: '100:0:0:1::/64', name: 'dummy prefix', reason: 'IANA dummy prefix for configuration examples: never routed', policy: 'always' },
  { range: '2001::/23', name: 'IETF protocol assignments', reason: 'RFC 2928: anycast services and special prefixes', policy: 'always' },
  { range: '2001::/32', name: 'Teredo', reason: 'RFC 4380: tunnels to an obfuscated IPv4 client behind NAT', policy: 'always' },
  { range: '2001:2::/48', name: 'benchmarking', reason: 'RFC 5180: lab networks only', policy: 'always' },
  { range: '2001:10::/28', name: 'ORCHID', reason: 'RFC 4843: deprecated, not routable', policy: 'always' },
  { range: '2001:20::/28', name: 'ORCHIDv2', reason: 'RFC 7343: identifiers, not routable', policy: 'always' },
  { range: '2001:db8::/32', name: 'documentation', reason: 'RFC 3849: never routed', policy: 'private' },
  { range: '2002::/16', name: '6to4', reason: 'RFC 3056: tunnelled to the IPv4 address in bits 16-47', policy: 'embedded' },
  { range: '2620:4f:8000::/48', name: 'AS112 direct delegation', reason: 'RFC 7534 DNS sink anycast, no receivers', policy: 'always' },
  { range: '3fff::/20', name: 'documentation', reason: 'RFC 9637: never routed', policy: 'private' },
  { range: '5f00::/16', name: 'SRv6 SIDs', reason: 'RFC 9602: segment routing identifiers, not hosts', policy: 'always' },
  { range: 'fc00::/7', name: 'unique-local', reason: 'RFC 4193 private network', policy: 'private' },
  { range: 'fd00:ec2::254/128', name: 'EC2 metadata (IPv6)', reason: 'the cloud metadata service', policy: 'always' },
  { range: 'fe80::/10', name: 'link-local', reason: 'RFC 4291: the local link only', policy: 'always' },
  { range: 'fec0::/10', name: 'site-local', reason: 'RFC 3879: deprecated private network', policy: 'always' },
  { range: 'ff00::/8', name: 'multicast', reason: 'RFC 4291: not a single receiver', policy: 'always' },
  // Everything outside global unicast is unassigned by the IETF (RFC 4291 2.4); the rows above
  // are the more specific exceptions inside these.
  { range: '::/3', name: 'outside global unicast', reason: 'RFC 4291: reserved by the IETF', policy: 'always' },
  { range: '4000::/2', name: 'outside global unicast', reason: 'RFC 4291: reserved by the IETF', policy: 'always' },
  { range: '8000::/1', name: 'outside global unicast', reason: 'RFC 4291: reserved by the IETF', policy: 'always' },
];

type CompiledRange = { row: SpecialRange; family: 'ipv4' | 'ipv6'; prefix: number; list: BlockList };

/**
 * Each row in its own BlockList, most specific first, so the first row that holds an address is
 * the one that decides. Rows are consulted only for their own family: BlockList would otherwise
 * match an IPv4 address against `::ffff:0:0/96`, and an IPv4-mapped address against IPv4 rows.
 */
const COMPILED: readonly CompiledRange[] = SPECIAL_RANGES.map((row) => {
  const [network = '', bits = ''] = row.range.split('/');
  const family = isIP(network) === 4 ? 'ipv4' : 'ipv6';
  const prefix = Number(bits);
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return { row, family, prefix, list } as CompiledRange;
}).sort((a, b) => b.prefix - a.prefix);

/** The eight 16-bit groups of a valid IPv6 address (zone id dropped, a dotted IPv4 tail expanded). */
function ipv6Groups(address: string): number[] {
  let text = address.split('%')[0] ?? '';
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  return [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
}

/** The IPv4 address an `embedded` IPv6 range carries. */
function embeddedIpv4(address: string, range: SpecialRange): string {
  const groups = ipv6Groups(address);
  // 6to4 (2002:AABB:CCDD::/48) carries it right after the prefix; the others in the low 32 bits.
  const [high = 0, low = 0] = range.range === '2002::/16' ? [groups[1], groups[2]] : [groups[6], groups[7]];
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/** The most specific special-purpose range holding this address, if any. */
export function specialRangeOf(address: string): SpecialRange | undefined {
  const family = isIP(address);
  if (family === 0) {
    return undefined;
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  return COMPILED.find((c) => c.family === type && c.list.check(address, type))?.row;
}

export type AddressPolicy = { allowPrivate: boolean };

/** Whether svc may connect to this IP address (v4, v6, or any IPv6 form that embeds an IPv4 one). */
export function isAddressAllowed(address: string, policy: AddressPolicy): boolean {
  if (isIP(address) === 0) {
    return false;
  }
  const range = specialRangeOf(address);
  if (!range) {
    return true;
  }
  switch (range.policy) {
    case 'always':
      return false;
    case 'private':
      return policy.allowPrivate;
    case 'embedded':
      return isAddressAllowed(embeddedIpv4(address, range), policy);
  }
}

export type UrlProblem = { code: 'webhook_url_invalid' | 'webhook_url_not_allowed'; message: string };

/** The URL's host without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/**
 * Host names of cloud metadata services, refused by name whatever they resolve to (they resolve
 * to a refused address inside the cloud, but a save may happen where DNS does not answer, and a
 * resolver may be configured to say otherwise). Compared lower-cased, without trailing dots.
 */
export const METADATA_HOSTNAMES: ReadonlySet<string> = new Set([
  // Google Cloud (the short name resolves through the instance's search domain).
  'metadata.google.internal',
  'metadata.goog',
  'metadata',
  // AWS EC2.
  'instance-data',
  'instance-data.ec2.internal',
  // Tencent Cloud.
  'metadata.tencentyun.com',
]);

/** RFC 6761: `localhost` and every name under it are loopback, whatever DNS says. */
function isLoopbackName(name: string): boolean {
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * What can be said of a URL's host without DNS. The WHATWG URL parser has already turned every
 * IPv4 notation it accepts (decimal `2852039166`, octal, hex, short forms, a trailing dot) into
 * dotted quads and IPv6 into its canonical form, so an IP literal is judged here by the address
 * table in whatever notation it was written; a known metadata name is refused; a loopback name
 * is judged as 127.0.0.1. `resolve`: a name whose addresses decide (at save, and at every
 * connection through guardedLookup).
 */
export function judgeHost(url: URL, policy: AddressPolicy): 'allowed' | 'refused' | 'resolve' {
  const host = hostOf(url);
  if (isIP(host)) {
    return isAddressAllowed(host, policy) ? 'allowed' : 'refused';
  }
  const name = host.toLowerCase().replace(/\.+$/, '');
  if (METADATA_HOSTNAMES.has(name)) {
    return 'refused';
  }
  if (isLoopbackName(name)) {
    return isAddressAllowed('127.0.0.1', policy) ? 'allowed' : 'refused';
  }
  return 'resolve';
}

const NOT_ALLOWED: UrlProblem = {
  code: 'webhook_url_not_allowed',
  message:
    'the URL is or resolves to a private, loopback, link-local, reserved or cloud metadata address; svc sends only to public addresses',
};

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
 * Everything checkWebhookUrl checks that needs no DNS: the shape, then the host by judgeHost. For
 * a URL whose host need not resolve when it is saved (an application's back-channel logout URL,
 * often registered before its receiver is deployed); each send checks the resolved addresses.
 */
export function checkUrlWithoutDns(raw: string, policy: AddressPolicy): { url: URL } | { problem: UrlProblem } {
  const shape = checkWebhookUrlShape(raw);
  if ('problem' in shape) {
    return shape;
  }
  return judgeHost(shape.url, policy) === 'refused' ? { problem: NOT_ALLOWED } : shape;
}

/**
 * The full check made when an endpoint is saved: checkUrlWithoutDns, then every address a host
 * name resolves to. A host that does not resolve is refused too (the receiver must exist to be
 * registered).
 */
export async function checkWebhookUrl(raw: string, policy: AddressPolicy): Promise<{ url: URL } | { problem: UrlProblem }> {
  const checked = checkUrlWithoutDns(raw, policy);
  if ('problem' in checked || judgeHost(checked.url, policy) !== 'resolve') {
    return checked;
  }
  const host = hostOf(checked.url);
  let addresses: string[];
  try {
    addresses = (await lookupAll(host)).map((a) => a.address);
  } catch {
    return { problem: { code: 'webhook_url_invalid', message: `the host ${host} does not resolve` } };
  }
  if (addresses.length === 0 || !addresses.every((a) => isAddressAllowed(a, policy))) {
    return { problem: NOT_ALLOWED };
  }
  return checked;
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

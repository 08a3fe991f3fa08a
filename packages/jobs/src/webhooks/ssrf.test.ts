import { isIP } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  checkUrlWithoutDns,
  checkWebhookUrl,
  isAddressAllowed,
  judgeHost,
  METADATA_HOSTNAMES,
  SPECIAL_RANGES,
  type SpecialRange,
  specialRangeOf,
} from './ssrf.ts';

/** An IP address as a number, so a range's first address and the ones around it can be computed. */
function toBig(address: string): { n: bigint; bits: number } {
  if (isIP(address) === 4) {
    return { n: address.split('.').reduce((acc, octet) => (acc << 8n) | BigInt(octet), 0n), bits: 32 };
  }
  const [head = '', tail = ''] = address.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':'));
  const left = parse(head);
  const right = address.includes('::') ? parse(tail) : [];
  const groups = [...left, ...new Array(8 - left.length - right.length).fill('0'), ...right];
  return { n: groups.reduce((acc, g) => (acc << 16n) | BigInt(Number.parseInt(g, 16)), 0n), bits: 128 };
}

function fromBig(n: bigint, bits: number): string {
  if (bits === 32) {
    return [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 0xffn)).join('.');
  }
  return [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((s) => ((n >> s) & 0xffffn).toString(16)).join(':');
}

/**
 * An address inside the range that no more specific row holds (its second address, its middle or
 * its last; its only one for a /32 or /128), and the addresses just before and after the range.
 */
function around(row: SpecialRange): { inside: string; before: string | undefined; after: string | undefined } {
  const [network = '', prefixText = ''] = row.range.split('/');
  const { n, bits } = toBig(network);
  const size = 1n << BigInt(bits - Number(prefixText));
  const max = (1n << BigInt(bits)) - 1n;
  const last = n + size - 1n;
  const candidates = size > 1n ? [n + 1n, n + size / 2n + 1n, last] : [n];
  const inside = candidates.map((c) => fromBig(c, bits)).find((a) => specialRangeOf(a) === row) ?? fromBig(n, bits);
  return {
    inside,
    before: n > 0n ? fromBig(n - 1n, bits) : undefined,
    after: last < max ? fromBig(last + 1n, bits) : undefined,
  };
}

const STRICT = { allowPrivate: false };
const LOOSE = { allowPrivate: true };

describe('the special-purpose address table', () => {
  it.each(SPECIAL_RANGES.filter((row) => row.policy !== 'embedded').map((row) => [`${row.range} ${row.name}`, row] as const))(
    '%s: an address inside is refused, by this row',
    (_label, row) => {
      const { inside } = around(row);
      expect(specialRangeOf(inside)).toBe(row);
      expect(isAddressAllowed(inside, STRICT)).toBe(false);
      // WEBHOOK_ALLOW_PRIVATE opens the private rows only.
      expect(isAddressAllowed(inside, LOOSE)).toBe(row.policy === 'private');
    },
  );

  it.each(SPECIAL_RANGES.map((row) => [`${row.range} ${row.name}`, row] as const))(
    '%s: the addresses just outside are not decided by this row, and are allowed when no other row holds them',
    (_label, row) => {
      const { before, after } = around(row);
      for (const outside of [before, after]) {
        if (outside === undefined) {
          continue;
        }
        const holder = specialRangeOf(outside);
        expect(holder?.range === row.range && holder.name === row.name, outside).toBe(false);
        if (holder === undefined) {
          expect(isAddressAllowed(outside, STRICT), outside).toBe(true);
        }
      }
    },
  );

  // Forms that carry an IPv4 address: the verdict is the embedded address's, never the wrapper's.
  const EMBEDDING: [string, (v4: string) => string][] = [
    ['::ffff:0:0/96', (v4) => `::ffff:${v4}`],
    ['::ffff:0:0:0/96', (v4) => `::ffff:0:${v4}`],
    ['64:ff9b::/96', (v4) => `64:ff9b::${v4}`],
    ['2002::/16', (v4) => `2002:${hex(v4)}::1`],
  ];
  function hex(v4: string): string {
    const [a = 0, b = 0, c = 0, d = 0] = v4.split('.').map(Number);
    return `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }

  it('every embedding row of the table is covered below', () => {
    expect(SPECIAL_RANGES.filter((row) => row.policy === 'embedded').map((row) => row.range)).toEqual(EMBEDDING.map(([range]) => range));
  });

  it.each(EMBEDDING)('%s: the embedded IPv4 address is checked by the same table', (range, embed) => {
    // Cloud metadata inside: refused even with WEBHOOK_ALLOW_PRIVATE.
    expect(specialRangeOf(embed('169.254.169.254'))?.range).toBe(range);
    expect(isAddressAllowed(embed('169.254.169.254'), LOOSE)).toBe(false);
    expect(isAddressAllowed(embed('0.0.0.0'), LOOSE)).toBe(false);
    // Loopback and private networks inside: refused, unless WEBHOOK_ALLOW_PRIVATE.
    for (const v4 of ['127.0.0.1', '10.1.2.3', '192.168.1.1', '172.16.0.1', '100.64.0.1']) {
      expect(isAddressAllowed(embed(v4), STRICT), embed(v4)).toBe(false);
      expect(isAddressAllowed(embed(v4), LOOSE), embed(v4)).toBe(true);
    }
    // A public IPv4 address inside is as good as the address itself (DNS64 answers look like this).
    expect(isAddressAllowed(embed('93.184.215.14'), STRICT)).toBe(true);
  });

  it('IPv4-compatible, Teredo and local-use NAT64 forms are refused whatever they carry', () => {
    for (const address of ['::127.0.0.1', '::8.8.8.8', '::a9fe:a9fe', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '64:ff9b:1::808:808']) {
      expect(isAddressAllowed(address, LOOSE), address).toBe(false);
    }
  });

  it('public addresses pass; zone ids and malformed input do not confuse the check', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '93.184.215.14', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e']) {
      expect(isAddressAllowed(address, STRICT), address).toBe(true);
    }
    expect(isAddressAllowed('fe80::1%eth0', LOOSE)).toBe(false);
    for (const junk of ['', 'localhost', '127.1', '0x7f000001', '::ffff:127.0.0.1.1', '1.2.3.4/8']) {
      expect(isAddressAllowed(junk, LOOSE), junk).toBe(false);
    }
  });

  it('saving an endpoint whose URL is an IP literal in an embedding form is refused', async () => {
    for (const url of [
      'http://[64:ff9b::7f00:1]/hook',
      'http://[2002:7f00:1::1]/hook',
      'http://[::7f00:1]/hook',
      'http://[::ffff:0:a9fe:a9fe]/hook',
    ]) {
      const result = await checkWebhookUrl(url, STRICT);
      expect('problem' in result && result.problem.code, url).toBe('webhook_url_not_allowed');
    }
    expect('url' in (await checkWebhookUrl('http://[64:ff9b::808:808]/hook', STRICT))).toBe(true);
  });
});

describe('hosts judged without DNS (the save of a back-channel logout URL, and every send)', () => {
  const judge = (url: string, policy = STRICT) => judgeHost(new URL(url), policy);

  it('an IP literal is judged by the table in every notation the URL parser accepts', () => {
    for (const url of [
      'https://169.254.169.254/',
      'https://2852039166/',
      'https://0251.0376.0251.0376/',
      'https://0xa9fea9fe/',
      'https://0xa9.0xfe.0xa9.0xfe/',
      'https://169.254.43518/',
      'https://169.254.169.254./',
      'https://[::ffff:a9fe:a9fe]/',
      'https://[::ffff:169.254.169.254]/',
      'https://[fd00:ec2::254]/',
      'https://[64:ff9b::a9fe:a9fe]/',
    ]) {
      expect(judge(url, LOOSE), url).toBe('refused');
    }
    for (const url of ['http://2130706433/', 'http://127.1/', 'https://[::1]/', 'https://10.1.2.3/', 'https://[fd12::1]/']) {
      expect(judge(url), url).toBe('refused');
      expect(judge(url, LOOSE), url).toBe('allowed');
    }
    expect(judge('https://8.8.8.8/')).toBe('allowed');
    expect(judge('https://[2606:4700:4700::1111]/')).toBe('allowed');
  });

  it('known metadata names are refused whatever the case, trailing dots and WEBHOOK_ALLOW_PRIVATE', () => {
    for (const name of METADATA_HOSTNAMES) {
      for (const url of [`https://${name}/`, `https://${name.toUpperCase()}./x`, `http://${name}..:80/`]) {
        expect(judge(url, LOOSE), url).toBe('refused');
      }
    }
    // Only the names themselves: a name that merely contains one is resolved like any other.
    expect(judge('https://metadata.google.internal.example.com/')).toBe('resolve');
    expect(judge('https://app.example.com/')).toBe('resolve');
  });

  it('localhost and names under it are loopback: refused unless WEBHOOK_ALLOW_PRIVATE', () => {
    for (const url of ['http://localhost:3000/', 'http://LOCALHOST./', 'https://api.localhost/']) {
      expect(judge(url), url).toBe('refused');
      expect(judge(url, LOOSE), url).toBe('allowed');
    }
  });

  it('checkUrlWithoutDns answers webhook_url_not_allowed for those, passes names to resolve later, and keeps the shape rules', () => {
    const problem = (url: string) => {
      const checked = checkUrlWithoutDns(url, STRICT);
      return 'problem' in checked ? checked.problem.code : null;
    };
    expect(problem('https://metadata.google.internal/computeMetadata/v1/')).toBe('webhook_url_not_allowed');
    expect(problem('https://2852039166/')).toBe('webhook_url_not_allowed');
    expect(problem('https://does-not-resolve.invalid/bc')).toBeNull();
    expect(problem('ftp://example.com/')).toBe('webhook_url_invalid');
  });

  it('checkWebhookUrl refuses a metadata name before asking DNS', async () => {
    const result = await checkWebhookUrl('https://metadata.google.internal/hook', LOOSE);
    expect('problem' in result && result.problem.code).toBe('webhook_url_not_allowed');
  });
});

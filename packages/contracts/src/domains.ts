import { z } from 'zod';
import { ZListQuery, ZPage, ZSlug } from './lists.ts';
import { ZRoleKey } from './permissions.ts';

// An organization's email domains (docs/enterprise.md "Domains"). The id shape of ids.ts is written
// out: that module draws random bytes with node:crypto at load, and this one is also bundled into
// the console.

/** `dom_` + 20 base62: an organization domain id. Anything else is a 400, never a lookup. */
export const ZDomainId = z.string().regex(/^dom_[0-9A-Za-z]{20}$/, 'expected a domain id (dom_...)');

/** The name of the TXT record that proves a domain: `_svc-verification.<domain>`. */
export const DOMAIN_VERIFICATION_LABEL = '_svc-verification';
/** The TXT record's value is this prefix followed by the domain's token. */
export const DOMAIN_VERIFICATION_PREFIX = 'svc-domain-verification=';

export function verificationRecordName(domain: string): string {
  return `${DOMAIN_VERIFICATION_LABEL}.${domain}`;
}

export function verificationRecordValue(token: string): string {
  return `${DOMAIN_VERIFICATION_PREFIX}${token}`;
}

/**
 * What people signing in with an email of the domain get, once it is verified: nothing
 * (`none`), an active membership with the chosen role (`auto_join`), or, later, a sign-in through
 * the organization's SSO connection (`require_sso`, stored now and enforced once connections
 * exist; docs/enterprise.md "Domains").
 */
export const ZDomainPolicy = z.enum(['none', 'auto_join', 'require_sso']).meta({ id: 'DomainPolicy' });
export type TDomainPolicy = z.infer<typeof ZDomainPolicy>;

export const ZDomainStatus = z.enum(['pending', 'verified']).meta({ id: 'DomainStatus' });
export type TDomainStatus = z.infer<typeof ZDomainStatus>;

/** Why the last check did not find the record (null: it did, or none ran yet). */
export const ZDomainCheckError = z
  .enum(['record_not_found', 'token_mismatch', 'dns_timeout', 'dns_error'])
  .meta({ id: 'DomainCheckError' });
export type TDomainCheckError = z.infer<typeof ZDomainCheckError>;

export const ZDomain = z
  .object({
    id: z.string(),
    /** Lower-case ASCII (an internationalized name in its punycode form), no trailing dot. */
    domain: z.string(),
    status: ZDomainStatus,
    /** The DNS record that proves the domain: create it at the domain's DNS host, then verify. */
    verification: z.object({
      type: z.literal('TXT'),
      name: z.string(),
      value: z.string(),
    }),
    verifiedAt: z.string().nullable(),
    lastCheckedAt: z.string().nullable(),
    lastCheckError: ZDomainCheckError.nullable(),
    policy: ZDomainPolicy,
    /** The role `auto_join` gives; null for the other policies. */
    autoJoinRoleKey: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Domain' });
export type TDomain = z.infer<typeof ZDomain>;

export const ZDomainPage = ZPage(ZDomain).meta({ id: 'DomainPage' });
export type TDomainPage = z.infer<typeof ZDomainPage>;

const organizationSlug = ZSlug.optional().describe(
  "the organization; default: the session's active workspace or the API key's organization",
);

export const ZListDomainsRequest = ZListQuery.extend({ organization_slug: organizationSlug });
export type TListDomainsRequest = z.infer<typeof ZListDomainsRequest>;

/**
 * POST /v1/domains. The name is checked and normalized by `normalizeDomain` in the service (400
 * `domain_invalid` or `domain_public_suffix`), so the schema only bounds its size.
 */
export const ZCreateDomainRequest = z.object({
  organization_slug: organizationSlug,
  domain: z.string().min(1, 'enter a domain, e.g. acme.com').max(1000),
});
export type TCreateDomainRequest = z.infer<typeof ZCreateDomainRequest>;

export const ZDomainRef = z.object({ id: ZDomainId, organization_slug: organizationSlug });
export type TDomainRef = z.infer<typeof ZDomainRef>;

/** PATCH /v1/domains/{id}: the policy, and for `auto_join` the role it gives. */
export const ZUpdateDomainRequest = z
  .object({
    id: ZDomainId,
    organization_slug: organizationSlug,
    policy: ZDomainPolicy,
    autoJoinRoleKey: ZRoleKey.optional().describe('required with auto_join, refused otherwise'),
  })
  .refine((v) => (v.policy === 'auto_join') === (v.autoJoinRoleKey !== undefined), {
    message: 'autoJoinRoleKey is required with the auto_join policy and refused with the others',
    path: ['autoJoinRoleKey'],
  });
export type TUpdateDomainRequest = z.infer<typeof ZUpdateDomainRequest>;

export const ZDeletedDomain = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'DeletedDomain' });
export type TDeletedDomain = z.infer<typeof ZDeletedDomain>;

/** The longest name DNS carries: 253 characters without the trailing dot. */
export const DOMAIN_MAX_LENGTH = 253;

/**
 * Two-label names that are public suffixes (registries sell names under them), so no organization
 * can own them. Not the whole Public Suffix List: no library in svc carries it, and a one-label
 * name (`com`, `uk`) is refused anyway. These are the commonest second-level registries;
 * docs/enterprise.md "Domains" says so.
 */
const PUBLIC_SUFFIXES: ReadonlySet<string> = new Set([
  'co.uk',
  'org.uk',
  'me.uk',
  'ltd.uk',
  'plc.uk',
  'net.uk',
  'ac.uk',
  'gov.uk',
  'nhs.uk',
  'sch.uk',
  'com.au',
  'net.au',
  'org.au',
  'edu.au',
  'gov.au',
  'id.au',
  'co.nz',
  'org.nz',
  'net.nz',
  'govt.nz',
  'ac.nz',
  'co.jp',
  'ne.jp',
  'or.jp',
  'ac.jp',
  'go.jp',
  'co.kr',
  'or.kr',
  'ac.kr',
  'go.kr',
  'com.br',
  'net.br',
  'org.br',
  'gov.br',
  'com.cn',
  'net.cn',
  'org.cn',
  'gov.cn',
  'edu.cn',
  'com.hk',
  'org.hk',
  'com.tw',
  'org.tw',
  'com.sg',
  'edu.sg',
  'gov.sg',
  'co.in',
  'net.in',
  'org.in',
  'gov.in',
  'ac.in',
  'firm.in',
  'co.za',
  'org.za',
  'gov.za',
  'ac.za',
  'com.mx',
  'org.mx',
  'gob.mx',
  'com.ar',
  'com.co',
  'com.tr',
  'gov.tr',
  'com.pl',
  'com.ru',
  'co.il',
  'org.il',
  'ac.il',
  'co.id',
  'or.id',
  'ac.id',
  'co.th',
  'ac.th',
  'com.my',
  'com.ph',
  'com.vn',
  'github.io',
  'herokuapp.com',
  'vercel.app',
  'netlify.app',
  'pages.dev',
  'workers.dev',
  'blogspot.com',
  'appspot.com',
  'azurewebsites.net',
  'cloudfront.net',
  'amazonaws.com',
  'web.app',
  'firebaseapp.com',
]);

/** Why a name is refused, with the code the API answers. */
export type DomainProblem = { code: 'domain_invalid' | 'domain_public_suffix'; message: string };

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const IPV4ISH = /^[0-9.]+$|^0x/i;

/**
 * The one normalization of an email domain (docs/enterprise.md "Domains"): surrounding whitespace
 * trimmed, lower-cased, one trailing dot dropped, an internationalized name turned into its
 * punycode (IDNA, by the WHATWG URL parser every runtime has), then refused when it is an IP
 * address, a single label, longer than 253 characters, has a label that is not letters, digits
 * and inner hyphens of at most 63 characters, or is a public suffix. `Acme.COM.`, `acme.com` and
 * ` acme.com ` are the same domain; `bücher.de` is `xn--bcher-kva.de`.
 */
export function normalizeDomain(raw: string): { domain: string } | { problem: DomainProblem } {
  const invalid = (message: string) => ({ problem: { code: 'domain_invalid' as const, message } });
  const trimmed = raw.trim();
  if (trimmed === '') {
    return invalid('enter a domain, e.g. acme.com');
  }
  if (trimmed.length > 1000) {
    return invalid(`a domain is at most ${DOMAIN_MAX_LENGTH} characters`);
  }
  if (/\s/.test(trimmed)) {
    return invalid('a domain has no spaces');
  }
  // Anything a URL parser would read as more than a host (scheme, port, path, userinfo, IPv6
  // brackets, escapes) is not a domain: refused, never cut down to the host part.
  if (/[/\\:@?#[\]%*]/.test(trimmed)) {
    return invalid('enter the domain alone (acme.com), without a scheme, port, path, address or wildcard');
  }
  const withoutDot = trimmed.endsWith('.') ? trimmed.slice(0, -1) : trimmed;
  if (withoutDot === '' || withoutDot.startsWith('.') || withoutDot.includes('..')) {
    return invalid('a domain is labels separated by single dots, e.g. acme.com');
  }
  let ascii: string;
  try {
    ascii = new URL(`http://${withoutDot}/`).hostname.toLowerCase();
  } catch {
    return invalid('not a valid domain name');
  }
  // The URL parser turns an IPv4 address in any spelling (0x7f.1, 2130706433) into dotted digits.
  if (IPV4ISH.test(withoutDot) || /^[0-9.]+$/.test(ascii)) {
    return invalid('an IP address is not a domain: enter the domain people have email addresses at');
  }
  if (ascii.length > DOMAIN_MAX_LENGTH) {
    return invalid(`a domain is at most ${DOMAIN_MAX_LENGTH} characters`);
  }
  const labels = ascii.split('.');
  if (labels.length < 2) {
    return invalid('enter a full domain with at least two labels, e.g. acme.com');
  }
  if (!labels.every((label) => LABEL.test(label))) {
    return invalid('each label of a domain is 1-63 letters, digits or inner hyphens');
  }
  if (/^[0-9]+$/.test(labels[labels.length - 1] ?? '')) {
    return invalid('a domain does not end with a numeric label');
  }
  if (PUBLIC_SUFFIXES.has(ascii)) {
    return {
      problem: { code: 'domain_public_suffix', message: `${ascii} is a public suffix: enter your organization's own domain under it` },
    };
  }
  return { domain: ascii };
}

/** An email's domain as `normalizeDomain` writes it, or null when it has none that could be verified. */
export function emailDomainOf(email: string): string | null {
  const at = email.lastIndexOf('@');
  if (at < 0) {
    return null;
  }
  const normalized = normalizeDomain(email.slice(at + 1));
  return 'domain' in normalized ? normalized.domain : null;
}

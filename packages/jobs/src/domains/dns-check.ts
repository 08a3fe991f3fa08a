import { Resolver } from 'node:dns/promises';
import { DOMAIN_VERIFICATION_PREFIX, verificationRecordName, verificationRecordValue } from '@svc/contracts/domains';
import type { DomainCheckError } from '@svc/db/queries/domains';

/** DNS_RESOLVER and DNS_TIMEOUT_MS (apps/api env.ts `config.dns`). */
export type DnsSettings = {
  /** `host` or `host:port` of the resolver to ask; null: the system's (/etc/resolv.conf). */
  resolver: string | null;
  /** A lookup that has not answered by then counts as `dns_timeout`. */
  timeoutMs: number;
};

/** The system's resolvers, five seconds: what a worker without DNS settings uses. */
export const DEFAULT_DNS_SETTINGS: DnsSettings = { resolver: null, timeoutMs: 5_000 };

/**
 * Whether `_svc-verification.<domain>` has a TXT record `svc-domain-verification=<token>`
 * (docs/enterprise.md "Domains"): null when it does, else why not. Only the exact value counts: a
 * record carrying another organization's token (or an old one) is `token_mismatch`. Never throws:
 * a resolver that fails or is slow is a failed check (`dns_error`, `dns_timeout`), not a 500.
 */
export async function checkDomainRecord(settings: DnsSettings, opts: { domain: string; token: string }): Promise<DomainCheckError | null> {
  const resolver = new Resolver({ timeout: settings.timeoutMs, tries: 1 });
  if (settings.resolver) {
    resolver.setServers([settings.resolver]);
  }
  // c-ares' own timeout is per attempt; this bounds the whole lookup whatever it does.
  const guard = setTimeout(() => resolver.cancel(), settings.timeoutMs + 100);
  let records: string[][];
  try {
    records = await resolver.resolveTxt(verificationRecordName(opts.domain));
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ENOTFOUND' || code === 'ENODATA') {
      return 'record_not_found';
    }
    return code === 'ETIMEOUT' || code === 'ECANCELLED' ? 'dns_timeout' : 'dns_error';
  } finally {
    clearTimeout(guard);
  }
  // A TXT record longer than 255 bytes comes in chunks: they form one string.
  const values = records.map((chunks) => chunks.join('').trim());
  if (values.includes(verificationRecordValue(opts.token))) {
    return null;
  }
  return values.some((v) => v.startsWith(DOMAIN_VERIFICATION_PREFIX)) ? 'token_mismatch' : 'record_not_found';
}

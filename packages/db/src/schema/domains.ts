import { sql } from 'drizzle-orm';
import { index, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.ts';

/**
 * An organization's email domain (docs/enterprise.md "Domains"): added by an org admin, proven by
 * a DNS TXT record holding `verification_token`, re-checked daily. A domain is verified by at most
 * one organization (the partial unique index); any number may have it pending.
 */
export const organizationDomains = pgTable(
  'organization_domains',
  {
    /** `dom_` prefixed id. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    /** Normalized by contracts' normalizeDomain: lower-case ASCII (punycode), no trailing dot. */
    domain: text('domain').notNull(),
    /**
     * The random value the TXT record must carry (`svc-domain-verification=<token>`). Not a
     * secret: it is published in DNS; it only ties the record to this organization's row.
     */
    verificationToken: text('verification_token').notNull(),
    /** When the record was last found; null while pending (never verified, or lost since). */
    verifiedAt: timestamp('verified_at', { withTimezone: true, mode: 'date', precision: 3 }),
    lastCheckedAt: timestamp('last_checked_at', { withTimezone: true, mode: 'date', precision: 3 }),
    /** Why the last check failed (contracts' ZDomainCheckError); null when it found the record. */
    lastCheckError: text('last_check_error', { enum: ['record_not_found', 'token_mismatch', 'dns_timeout', 'dns_error'] }),
    /** none, auto_join (with `auto_join_role_key`) or require_sso (enforced once connections exist). */
    policy: text('policy', { enum: ['none', 'auto_join', 'require_sso'] })
      .notNull()
      .default('none'),
    /** The role auto_join gives: a system role or one of the organization's custom roles. */
    autoJoinRoleKey: text('auto_join_role_key'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('organization_domains_tenant_domain_key').on(t.tenantId, t.domain),
    index('organization_domains_tenant_created_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc()),
    // At most one organization holds a domain verified; also the sign-in lookup by email domain.
    uniqueIndex('organization_domains_verified_domain_key').on(t.domain).where(sql`${t.verifiedAt} is not null`),
  ],
);

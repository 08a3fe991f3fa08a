import {
  emailDomainOf,
  normalizeDomain,
  type TCreateDomainRequest,
  type TDeletedDomain,
  type TDomain,
  type TDomainPage,
  type TDomainRef,
  type TListDomainsRequest,
  type TUpdateDomainRequest,
  verificationRecordName,
  verificationRecordValue,
} from '@svc/contracts/domains';
import { AppError } from '@svc/contracts/errors';
import { newId, randomBase62 } from '@svc/contracts/ids';
import { isSystemRole, SYSTEM_ROLES } from '@svc/contracts/permissions';
import type { Db, DbOrTx } from '@svc/db/client';
import { decodeCursor, toPage } from '@svc/db/pagination';
import {
  type DomainCheckError,
  type DomainRow,
  deleteDomain as deleteDomainRow,
  findDomain,
  findDomainTenant,
  findVerifiedDomain,
  findVerifiedElsewhere,
  hasMembership,
  insertDomain,
  listDomains as listDomainRows,
  lockDomainName,
  recordDomainCheck,
  updateDomainPolicy,
} from '@svc/db/queries/domains';
import { findOrganizationById } from '@svc/db/queries/organizations';
import { addOrgMember } from '@svc/db/queries/users';
import { checkDomainRecord, type DnsSettings } from '@svc/jobs/domains/dns-check';
import { type RecordSource, recordIn } from '../access/access-rule.ts';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import { type Access, assertGrantable, assertMembershipsManaged } from '../access/authorize.ts';
import { grantsOfRole } from '../access/role-grants.ts';
import { claimSeat } from '../subscriptions/enforce.ts';

const DOMAIN_NOT_FOUND = 'domain not found';

/** Random characters of a verification token (~190 bits): nobody guesses another row's value. */
const TOKEN_LENGTH = 32;

const iso = (at: Date | null): string | null => at?.toISOString() ?? null;

/** The answer's view of a row (docs/api.md "Domains"). */
export function toDomain(row: DomainRow): TDomain {
  return {
    id: row.id,
    domain: row.domain,
    status: row.verifiedAt ? 'verified' : 'pending',
    verification: { type: 'TXT', name: verificationRecordName(row.domain), value: verificationRecordValue(row.verificationToken) },
    verifiedAt: iso(row.verifiedAt),
    lastCheckedAt: iso(row.lastCheckedAt),
    lastCheckError: row.lastCheckError,
    policy: row.policy,
    autoJoinRoleKey: row.autoJoinRoleKey,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** A domain's `{id}` routes find their organization from the domain (modules/access/access-rule.ts). */
export const DOMAIN_RECORD: RecordSource = { tenantOf: findDomainTenant, notFound: DOMAIN_NOT_FOUND };

/** The domain an `{id}` route names, in the organization its access resolved. */
function domainOf(db: DbOrTx, access: Access, input: TDomainRef): Promise<DomainRow> {
  return recordIn(db, access, findDomain, input.id, DOMAIN_NOT_FOUND);
}

function normalizedOrThrow(raw: string): string {
  const normalized = normalizeDomain(raw);
  if ('problem' in normalized) {
    throw new AppError(normalized.problem.code, normalized.problem.message);
  }
  return normalized.domain;
}

const VERIFIED_ELSEWHERE = 'another organization has verified this domain; a domain is verified by one organization at most';

export async function listDomains(db: Db, { organization }: Access, input: TListDomainsRequest): Promise<TDomainPage> {
  const scope = `domains:${organization.id}`;
  const rows = await listDomainRows(db, { tenantId: organization.id, limit: input.limit, cursor: decodeCursor(scope, input.cursor) });
  return toPage(scope, rows, input.limit, toDomain);
}

export async function getDomain(db: Db, access: Access, input: TDomainRef): Promise<TDomain> {
  return toDomain(await domainOf(db, access, input));
}

/**
 * POST /v1/domains: the domain, pending, with a fresh verification token. Bad input is refused
 * before anything is read or written; a domain another organization has verified is 409
 * `domain_verified_elsewhere`, one this organization has already is 409 `domain_already_added`.
 */
export async function createDomain(db: Db, access: Access, request: RequestMeta, input: TCreateDomainRequest): Promise<TDomain> {
  const domain = normalizedOrThrow(input.domain);
  const tenantId = access.organization.id;
  return db.transaction(async (tx) => {
    await lockDomainName(tx, domain);
    if (await findVerifiedElsewhere(tx, { domain, exceptTenantId: tenantId })) {
      throw new AppError('domain_verified_elsewhere', VERIFIED_ELSEWHERE);
    }
    const row = await insertDomain(tx, { id: newId('domain'), tenantId, domain, verificationToken: randomBase62(TOKEN_LENGTH) });
    if (!row) {
      throw new AppError('domain_already_added', `the organization already has ${domain}`);
    }
    await recordAudit(tx, access.principal, request, {
      tenantId,
      action: 'domain.created',
      target: { type: 'domain', id: row.id },
      summary: { domain: row.domain },
    });
    return toDomain(row);
  });
}

/** A lookup that failed (timeout, resolver error) proves nothing: a verified domain stays verified. */
function isInconclusive(error: DomainCheckError | null): boolean {
  return error === 'dns_timeout' || error === 'dns_error';
}

/**
 * POST /v1/domains/{id}/verify: asks DNS now. The record found: verified (`domain.verified` the
 * first time), unless another organization verified the domain first (409
 * `domain_verified_elsewhere`; the one-owner index is the last word). Not found (or carrying
 * another token): pending, with why in `lastCheckError`; a verified domain whose record is gone
 * becomes pending (`domain.unverified`), as in the daily re-check. Answers the domain either way.
 */
export async function verifyDomain(db: Db, dns: DnsSettings, access: Access, request: RequestMeta, input: TDomainRef): Promise<TDomain> {
  const domain = await domainOf(db, access, input);
  const tenantId = access.organization.id;
  // Outside the transaction: a slow resolver holds no lock.
  const error = await checkDomainRecord(dns, { domain: domain.domain, token: domain.verificationToken });
  const now = new Date();
  try {
    return await db.transaction(async (tx) => {
      await lockDomainName(tx, domain.domain);
      const current = await findDomain(tx, { tenantId, id: domain.id, forUpdate: true });
      if (!current) {
        throw new AppError('not_found', DOMAIN_NOT_FOUND);
      }
      if (
        error === null &&
        !current.verifiedAt &&
        (await findVerifiedElsewhere(tx, { domain: current.domain, exceptTenantId: tenantId }))
      ) {
        throw new AppError('domain_verified_elsewhere', VERIFIED_ELSEWHERE);
      }
      const row = await recordDomainCheck(tx, { tenantId, id: current.id, error, now, keepVerified: isInconclusive(error) });
      if (!row) {
        throw new AppError('not_found', DOMAIN_NOT_FOUND);
      }
      if (!current.verifiedAt && row.verifiedAt) {
        await recordAudit(tx, access.principal, request, {
          tenantId,
          action: 'domain.verified',
          target: { type: 'domain', id: row.id },
          summary: { domain: row.domain },
        });
      } else if (current.verifiedAt && !row.verifiedAt) {
        await recordAudit(tx, access.principal, request, {
          tenantId,
          action: 'domain.unverified',
          target: { type: 'domain', id: row.id },
          summary: { domain: row.domain, reason: error, verifiedAt: current.verifiedAt },
        });
      }
      return toDomain(row);
    });
  } catch (caught) {
    // Two organizations racing past the lock cannot happen; the index still has the last word.
    if ((caught as { cause?: { code?: string } }).cause?.code === '23505') {
      throw new AppError('domain_verified_elsewhere', VERIFIED_ELSEWHERE);
    }
    throw caught;
  }
}

/** The control-plane permissions of a role of the organization, or undefined when it has no such role. */
export async function permissionsOfExistingRole(db: DbOrTx, tenantId: string, roleKey: string): Promise<readonly string[] | undefined> {
  if (isSystemRole(roleKey)) {
    return SYSTEM_ROLES[roleKey].permissions;
  }
  return (await grantsOfRole(db, tenantId, roleKey))?.control;
}

/**
 * PATCH /v1/domains/{id}: the policy. `auto_join` needs a role of the organization (400
 * `unknown_role`) that the caller could grant by invitation (the same rule: nothing above what
 * the caller holds), and an organization whose memberships svc manages. `require_sso` sends the
 * domain's people to the organization's SSO connection and refuses their engine sign-ins
 * (docs/enterprise.md "Domains", "SSO connections").
 */
export async function updateDomain(db: Db, access: Access, request: RequestMeta, input: TUpdateDomainRequest): Promise<TDomain> {
  const domain = await domainOf(db, access, input);
  const tenantId = access.organization.id;
  const roleKey = input.policy === 'auto_join' ? (input.autoJoinRoleKey ?? null) : null;
  if (roleKey !== null) {
    assertMembershipsManaged(access.organization);
    const permissions = await permissionsOfExistingRole(db, tenantId, roleKey);
    if (!permissions) {
      throw new AppError('unknown_role', `the organization has no role ${roleKey}`);
    }
    assertGrantable(access, permissions, 'you cannot let people join with a role that holds permissions you do not hold');
  }
  return db.transaction(async (tx) => {
    const row = await updateDomainPolicy(tx, { tenantId, id: domain.id, policy: input.policy, autoJoinRoleKey: roleKey, now: new Date() });
    if (!row) {
      throw new AppError('not_found', DOMAIN_NOT_FOUND);
    }
    await recordAudit(tx, access.principal, request, {
      tenantId,
      action: 'domain.updated',
      target: { type: 'domain', id: row.id },
      summary: {
        domain: row.domain,
        policy: row.policy,
        autoJoinRoleKey: row.autoJoinRoleKey,
        previous: { policy: domain.policy, autoJoinRoleKey: domain.autoJoinRoleKey },
      },
    });
    return toDomain(row);
  });
}

/** DELETE /v1/domains/{id}: gone at once; a verified one frees the name for another organization. */
export async function deleteDomain(db: Db, access: Access, request: RequestMeta, input: TDomainRef): Promise<TDeletedDomain> {
  const domain = await domainOf(db, access, input);
  return db.transaction(async (tx) => {
    const row = await deleteDomainRow(tx, { tenantId: access.organization.id, id: domain.id });
    if (!row) {
      throw new AppError('not_found', DOMAIN_NOT_FOUND);
    }
    await recordAudit(tx, access.principal, request, {
      tenantId: row.tenantId,
      action: 'domain.deleted',
      target: { type: 'domain', id: row.id },
      summary: { domain: row.domain, wasVerified: row.verifiedAt !== null },
    });
    return { id: row.id, deleted: true as const };
  });
}

/** Codes of a refused seat: the organization is full or its subscription does not allow adds. */
const SEAT_REFUSALS: ReadonlySet<string> = new Set(['subscription_limit_exceeded', 'subscription_inactive']);

/**
 * Auto-join at sign-in (docs/enterprise.md "Domains"), inside the sign-in's transaction: a person
 * whose engine-verified email is at a domain an organization has verified, with the `auto_join`
 * policy, becomes an active member there with the policy's role, audited as `member.added` (via
 * `domain_auto_join`, by svc) with its event. Nothing happens for an unverified email, a domain
 * nobody verified, another policy, a role the organization no longer has, or someone who has any
 * membership there already (invited, suspended: the organization's decision stands). A full
 * organization (no seat) skips the join rather than failing the sign-in. Returns the organization
 * joined, if any.
 */
export async function autoJoinByEmailDomain(
  tx: DbOrTx,
  opts: { userId: string; email: string; emailVerified: boolean; request: RequestMeta },
): Promise<string | null> {
  if (!opts.emailVerified) {
    return null;
  }
  const name = emailDomainOf(opts.email);
  if (!name) {
    return null;
  }
  const domain = await findVerifiedDomain(tx, name);
  if (!domain?.verifiedAt || domain.policy !== 'auto_join' || !domain.autoJoinRoleKey) {
    return null;
  }
  const tenantId = domain.tenantId;
  const organization = await findOrganizationById(tx, tenantId);
  if (organization?.kind !== 'tenant' || (await hasMembership(tx, { tenantId, userId: opts.userId }))) {
    return null;
  }
  const roleKey = domain.autoJoinRoleKey;
  if (!(await permissionsOfExistingRole(tx, tenantId, roleKey))) {
    return null;
  }
  try {
    // A savepoint: a refused seat undoes only the join, never the sign-in around it.
    return await tx.transaction(async (sp) => {
      await claimSeat(sp, tenantId);
      if (!(await addOrgMember(sp, { tenantId, userId: opts.userId, roleKey }))) {
        return null;
      }
      await recordAudit(sp, null, opts.request, {
        tenantId,
        action: 'member.added',
        target: { type: 'user', id: opts.userId },
        summary: { roleKey, via: 'domain_auto_join', domainId: domain.id, domain: domain.domain },
      });
      return tenantId;
    });
  } catch (error) {
    if (error instanceof AppError && SEAT_REFUSALS.has(error.code)) {
      return null;
    }
    throw error;
  }
}

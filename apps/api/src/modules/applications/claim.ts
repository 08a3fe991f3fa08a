import { timingSafeEqual } from 'node:crypto';
import { AppError } from '@svc/contracts/errors';
import { isIdOf } from '@svc/contracts/ids';
import type { Db, DbOrTx } from '@svc/db/client';
import {
  type ApplicationRow,
  claimKeylessApplicationRow,
  findKeylessApplication,
  findSlugsLike,
  lockApplicationById,
} from '@svc/db/queries/applications';
import { findOrganizationBySlug, type OrganizationRow } from '@svc/db/queries/organizations';
import { findSignedInPeople } from '@svc/db/queries/session-applications';
import { setSessionActiveTenant } from '@svc/db/queries/sessions';
import { addOrgMember } from '@svc/db/queries/users';
import type { SecretBox } from '@svc/db/secret-box';
import { type AccessRule, accessOf } from '../access/access-rule.ts';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import { assertMembershipsManaged } from '../access/authorize.ts';
import type { UserPrincipal } from '../access/principal.ts';
import { assertSubscriptionAllows, claimSeat } from '../subscriptions/enforce.ts';
import type { ApplicationCache } from './cache.ts';
import { newSecretKey } from './keys.ts';
import { createdSummary, slugify } from './service.ts';

/**
 * Claiming the keyless development application (docs/api.md "Claiming a keyless development application").
 *
 * The claim link carries a token: HMAC-SHA256 of the application id under a key derived from
 * SVC_ENCRYPTION_KEY (SecretBox.mac), so it is stored nowhere, cannot be guessed from the id
 * (which is public: it is the OIDC client id), and claims only while the application is keyless.
 * The keyless application is one per installation and every keyless=1 answer carries its link:
 * whoever can read keyless mode can claim it. That is the trade keyless mode makes; production
 * installations run with KEYLESS_ENABLED off (its default there).
 */

/** The secret-box context of claim tokens: a MAC made for anything else never matches. */
const CLAIM_CONTEXT = 'keyless-application-claim';

/** What a claim link's token looks like: 32 bytes, base64url. */
export const CLAIM_TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** The hosted claim page (GET shows it, POST claims). */
export const CLAIM_PATH = '/keyless/claim';

/**
 * Who may claim into a workspace: an org admin there (applications.manage, admin only). The
 * claim page is a plain Express route, no procedure: the claim resolves this rule itself, inside
 * its transaction, after the link's own refusals (keyless_disabled, an unknown link, 409
 * application_already_claimed) and with the keyless application locked.
 */
export const CLAIM_ACCESS = { permission: 'applications.manage', organization: 'id', adminOnly: true } as const satisfies AccessRule;

/** Role the people who signed in during development receive in the claiming workspace. */
const CLAIMED_MEMBER_ROLE = 'org_member';

export function keylessClaimToken(secretBox: SecretBox, applicationId: string): string {
  return secretBox.mac(applicationId, CLAIM_CONTEXT);
}

/** The claim link of the keyless application `applicationId`. */
export function keylessClaimUrl(publicUrl: string, secretBox: SecretBox, applicationId: string): string {
  const query = new URLSearchParams({ application: applicationId, token: keylessClaimToken(secretBox, applicationId) });
  return `${publicUrl.replace(/\/+$/, '')}${CLAIM_PATH}?${query}`;
}

/** A claim as the link carries it (unchecked). */
export type ClaimRef = { applicationId: string; token: string };

type ClaimDeps = { db: Db; secretBox: SecretBox; keylessEnabled: boolean };

const NOT_CLAIMABLE = 'no keyless application has this claim link; copy the whole link';

function tokenMatches(secretBox: SecretBox, ref: ClaimRef): boolean {
  if (!isIdOf('application', ref.applicationId) || !CLAIM_TOKEN_PATTERN.test(ref.token)) {
    return false;
  }
  const expected = Buffer.from(keylessClaimToken(secretBox, ref.applicationId));
  const given = Buffer.from(ref.token);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/**
 * The application a claim link names, locked when `lock` (inside the claim's transaction).
 * In order: keyless mode off (403 keyless_disabled), a token that is not this id's (404, the
 * same answer as an unknown id: nothing is read for it), an application no longer keyless (409
 * application_already_claimed: only a holder of its real link can learn that).
 */
async function claimable(deps: ClaimDeps, db: DbOrTx, ref: ClaimRef): Promise<ApplicationRow> {
  if (!deps.keylessEnabled) {
    throw new AppError('keyless_disabled', 'keyless development is disabled on this installation, so nothing can be claimed');
  }
  if (!tokenMatches(deps.secretBox, ref)) {
    throw new AppError('application_not_found', NOT_CLAIMABLE);
  }
  const row = await lockApplicationById(db, ref.applicationId);
  if (!row) {
    throw new AppError('application_not_found', NOT_CLAIMABLE);
  }
  if (!row.isKeyless) {
    throw new AppError(
      'application_already_claimed',
      'this application was already claimed; it is no longer a keyless development application',
    );
  }
  return row;
}

export type ClaimableApplication = {
  id: string;
  name: string;
  publishableKey: string;
  /** Active people who signed in to it: the claim adds those not yet members of the workspace. */
  signedInPeople: number;
  /** The URLs the apps built against it used (oidc-provider/keyless-urls.ts): the claim keeps them registered. */
  urls: Pick<ApplicationRow, 'redirectUrls' | 'postLogoutRedirectUrls' | 'allowedOrigins'>;
};

/**
 * The application a claim link names, if it can be claimed (the claim's own refusals): what the
 * claim page checks before asking anyone to sign in.
 */
export async function checkKeylessClaim(deps: ClaimDeps, ref: ClaimRef): Promise<ClaimableApplication> {
  const row = await claimable(deps, deps.db, ref);
  const people = await findSignedInPeople(deps.db, { applicationId: row.id });
  return {
    id: row.id,
    name: row.name,
    publishableKey: row.publishableKey,
    signedInPeople: people.length,
    urls: { redirectUrls: row.redirectUrls, postLogoutRedirectUrls: row.postLogoutRedirectUrls, allowedOrigins: row.allowedOrigins },
  };
}

/** The workspaces the person may claim into: tenants where they hold org_admin. */
export function claimWorkspacesOf(principal: UserPrincipal): { id: string; slug: string; name: string }[] {
  return principal.memberships
    .filter((m) => m.organization.kind === 'tenant' && m.roleKey === 'org_admin')
    .map((m) => ({ id: m.organization.id, slug: m.organization.slug, name: m.organization.name }));
}

export type ClaimedApplication = {
  application: ApplicationRow;
  organization: { id: string; slug: string; name: string };
  /** Raw secret: shown this once, never stored. */
  secretKey: string;
  membersAdded: number;
};

/**
 * How the claimed application signs people in, chosen at the claim: `confidential` for an app
 * with a server (it authenticates at the token endpoint with the secret key the claim shows),
 * `public` for a browser-only app (PKCE alone, as while keyless). The keyless application is
 * public; a server app built against it switches to its secret key with the claim (the context
 * and the claim page say so), a browser-only app changes nothing. PKCE stays required of public
 * clients, so no code is ever redeemable without either the verifier or the secret key.
 */
export type ClaimClientType = 'confidential' | 'public';

const CLAIM_CLIENT_TYPES: readonly ClaimClientType[] = ['confidential', 'public'];

export function claimClientTypeOf(raw: unknown): ClaimClientType {
  const found = CLAIM_CLIENT_TYPES.find((t) => t === raw);
  if (!found) {
    throw new AppError(
      'validation_failed',
      'choose how the app signs in: confidential (it has a server that keeps the secret key) or public (browser-only, PKCE alone)',
    );
  }
  return found;
}

function validName(raw: string | undefined, fallback: string): string {
  const name = (raw ?? '').trim() || fallback;
  if (name.length > 100) {
    throw new AppError('validation_failed', 'application name must be 1-100 characters');
  }
  return name;
}

/** What the person (or the operator) chose for the claimed application. */
type ClaimChoice = { name?: string; clientType: ClaimClientType };

/**
 * Moves the locked keyless row `row` into `organization` (already authorized): a free slug, a
 * new secret key, the chosen name and client type; its remembered URLs stay as its registered
 * ones. Every active person who signed in to it through svc and is not yet a member joins as
 * org_member (one seat each, under the seat lock); their sessions and grants stand. Audited (and
 * announced) as application.created, plus member.added per person added, as `actor` (null: the
 * operator's command line).
 */
async function moveKeylessApplication(
  tx: DbOrTx,
  row: ApplicationRow,
  organization: OrganizationRow,
  choice: ClaimChoice,
  actor: UserPrincipal | null,
  request: RequestMeta,
): Promise<ClaimedApplication> {
  assertMembershipsManaged(organization);
  await assertSubscriptionAllows(tx, organization.id);

  const name = validName(choice.name, row.name);
  const base = slugify(name);
  const taken = await findSlugsLike(tx, { tenantId: organization.id, base });
  let slug = base;
  for (let n = 2; taken.has(slug); n++) {
    slug = `${base.slice(0, 44)}-${n}`;
  }
  const secret = newSecretKey();
  const application = await claimKeylessApplicationRow(tx, {
    id: row.id,
    tenantId: organization.id,
    name,
    slug,
    secretKeyHash: secret.secretKeyHash,
    secretKeyPrefix: secret.secretKeyPrefix,
    clientType: choice.clientType,
  });
  if (!application) {
    throw new Error('a locked keyless application changed under its lock');
  }

  const people = await findSignedInPeople(tx, { applicationId: row.id, notMembersOf: organization.id });
  let membersAdded = 0;
  for (const userId of people) {
    await claimSeat(tx, organization.id);
    if (await addOrgMember(tx, { tenantId: organization.id, userId, roleKey: CLAIMED_MEMBER_ROLE })) {
      membersAdded++;
      await recordAudit(tx, actor, request, {
        tenantId: organization.id,
        action: 'member.added',
        target: { type: 'user', id: userId },
        summary: { roleKey: CLAIMED_MEMBER_ROLE, via: 'keyless_claim', applicationId: application.id },
      });
    }
  }
  await recordAudit(tx, actor, request, {
    tenantId: organization.id,
    action: 'application.created',
    target: { type: 'application', id: application.id },
    summary: { ...(await createdSummary(application)), claimedFromKeyless: true, membersAdded },
  });
  return {
    application,
    organization: { id: organization.id, slug: organization.slug, name: organization.name },
    secretKey: secret.secretKey,
    membersAdded,
  };
}

/**
 * The claim through the claim link (the hosted page): into `organizationId`, where the person
 * must be an org admin (404 for a workspace they cannot see, 403 without org_admin). Same id,
 * OIDC client id and publishable key; a new secret key, returned this once (moveKeylessApplication).
 * The next keyless=1 request creates a fresh keyless application. `openWorkspace` (the hosted
 * page) also opens the workspace in the claiming session, so the console lands on it.
 */
export async function claimKeylessApplication(
  deps: ClaimDeps & { applications: Pick<ApplicationCache, 'invalidateApplication'> },
  principal: UserPrincipal,
  request: RequestMeta,
  /** `clientType` as sent: checked (claimClientTypeOf) once the link is known to be claimable. */
  input: ClaimRef & { organizationId: string; name?: string; clientType: unknown },
  opts: { openWorkspace?: boolean } = {},
): Promise<ClaimedApplication> {
  if (!isIdOf('organization', input.organizationId)) {
    throw new AppError('validation_failed', 'choose a workspace');
  }
  const claimed = await deps.db.transaction(async (tx) => {
    const row = await claimable(deps, tx, input);
    const { organization } = await accessOf(tx, principal, CLAIM_ACCESS, { id: input.organizationId });
    if (!principal.memberships.some((m) => m.organization.id === organization.id && m.roleKey === 'org_admin')) {
      // A platform admin passes authorize anywhere; claiming takes a workspace of one's own.
      throw new AppError('forbidden', 'claim into a workspace where you are an org admin');
    }
    const choice = { name: input.name, clientType: claimClientTypeOf(input.clientType) };
    const claimedHere = await moveKeylessApplication(tx, row, organization, choice, principal, request);
    if (opts.openWorkspace) {
      await setSessionActiveTenant(tx, { id: principal.session.id, userId: principal.user.id, tenantId: organization.id });
    }
    return claimedHere;
  });
  // This process's cached copy (and its cached keyless application) go now; others on NOTIFY.
  deps.applications.invalidateApplication(claimed.application.id);
  return claimed;
}

/**
 * The operator's claim (`svc apps claim`): whoever holds the database and the encryption key
 * needs no claim link. Into the tenant organization `organizationSlug` (404 not_found for no such
 * tenant), audited as the system; otherwise the claim of the hosted page, with its rules.
 */
export async function claimKeylessApplicationAsOperator(
  db: Db,
  request: RequestMeta,
  input: { organizationSlug: string } & ClaimChoice,
): Promise<ClaimedApplication> {
  return db.transaction(async (tx) => {
    const keyless = await findKeylessApplication(tx);
    const row = keyless ? await lockApplicationById(tx, keyless.application.id) : undefined;
    if (!row?.isKeyless) {
      throw new AppError('application_not_found', 'there is no keyless development application to claim (keyless=1 creates one)');
    }
    const organization = await findOrganizationBySlug(tx, input.organizationSlug);
    if (organization?.kind !== 'tenant') {
      throw new AppError('not_found', `no organization ${input.organizationSlug} (svc orgs list shows them)`);
    }
    return moveKeylessApplication(tx, row, organization, input, null, request);
  });
}

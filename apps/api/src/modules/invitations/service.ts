import type { TQueuedEmail } from '@svc/contracts/email-deliveries';
import { AppError } from '@svc/contracts/errors';
import { newId, randomBase62 } from '@svc/contracts/ids';
import {
  INVITATION_TOKEN_PREFIX,
  INVITATION_TOKEN_RANDOM_LENGTH,
  type TAcceptInvitationResponse,
  type TCreateInvitationRequest,
  type TCreateInvitationResponse,
  type TGetInvitationRequest,
  type TInvitation,
  type TListInvitationsRequest,
  type TResendInvitationRequest,
  type TRevokeInvitationRequest,
} from '@svc/contracts/invitations';
import { isSystemRole, SYSTEM_ROLES } from '@svc/contracts/permissions';
import type { Db, DbOrTx } from '@svc/db/client';
import { decodeCursor, toPage } from '@svc/db/pagination';
import { findUserById } from '@svc/db/queries/identity';
import {
  findInvitationById,
  findInvitationByTokenHash,
  findPendingInvitationByEmail,
  type InvitationRow,
  insertInvitation,
  invitationStatus,
  isMember,
  listInvitations as listInvitationRows,
  lockInvitationEmail,
  markInvitationAccepted,
  revokeInvitation as revokeInvitationRow,
} from '@svc/db/queries/invitations';
import { findOrganizationById, type OrganizationRow } from '@svc/db/queries/organizations';
import { setSessionActiveTenant } from '@svc/db/queries/sessions';
import { acceptInvitedMembership, addOrgMember } from '@svc/db/queries/users';
import type { SecretBox } from '@svc/db/secret-box';
import { queueInvitationEmail } from '@svc/jobs/email/queue';
import { invitationEmail } from '@svc/jobs/email/template';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import { type Access, assertGrantable, assertMembershipsManaged } from '../access/authorize.ts';
import type { Principal, UserPrincipal } from '../access/principal.ts';
import { grantsOfRole } from '../access/role-grants.ts';
import { sha256Hex } from '../applications/keys.ts';
import { claimSeat } from '../subscriptions/enforce.ts';

/** What creating an invitation needs besides the database. */
export type InvitationSettings = {
  /** Where browsers reach svc: the invite link is `${publicUrl}/invitations/accept?token=...`. */
  publicUrl: string;
  ttlMs: number;
  /**
   * Spends one of the email's invitation sends (docs/architecture.md section 7), throwing `rate_limited` when
   * none is left. Called after authorization and the duplicate check, so refused requests spend
   * nobody's budget.
   */
  throttle: (email: string) => Promise<void>;
  /**
   * With email delivery enabled (EMAIL_ENABLED and a provider), the invitation email is queued in
   * the outbox in the invitation's transaction (docs/api.md "Invitations"). Null: no
   * provider, so nothing is queued or recorded, and the admin copies the link by hand (rule 2).
   */
  email: { secretBox: SecretBox } | null;
};

export function toInvitation(row: InvitationRow, now = new Date()): TInvitation {
  return {
    id: row.id,
    email: row.email,
    roleKey: row.roleKey,
    status: invitationStatus(row, now),
    requireEmailMatch: row.requireEmailMatch,
    invitedByUserId: row.invitedByUserId,
    expiresAt: row.expiresAt.toISOString(),
    acceptedAt: row.acceptedAt?.toISOString() ?? null,
    acceptedByUserId: row.acceptedByUserId,
    revokedAt: row.revokedAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
  };
}

export function inviteLinkOf(publicUrl: string, token: string): string {
  return `${publicUrl}/invitations/accept?token=${encodeURIComponent(token)}`;
}

/** The role's display name and control-plane permissions, or undefined when the organization has no such role. */
async function roleOf(
  db: DbOrTx,
  tenantId: string,
  roleKey: string,
): Promise<{ name: string; permissions: readonly string[] } | undefined> {
  if (isSystemRole(roleKey)) {
    return SYSTEM_ROLES[roleKey];
  }
  const grants = await grantsOfRole(db, tenantId, roleKey);
  return grants && { name: grants.name, permissions: grants.control };
}

/**
 * POST /v1/invitations. The role is checked now (a system role or one of the organization's
 * custom roles, and nothing the caller could not grant). One pending invitation per email and
 * organization: a second is 409 `invitation_already_pending` (revoke the first to send a new
 * link), since silently replacing it would kill a link the invitee may be about to use.
 */
export async function createInvitation(
  db: Db,
  settings: InvitationSettings,
  access: Access,
  request: RequestMeta,
  input: TCreateInvitationRequest,
  now = new Date(),
): Promise<TCreateInvitationResponse> {
  // Issuing a link (create or resend) needs an organization whose memberships svc manages.
  assertMembershipsManaged(access.organization);
  const tenantId = access.organization.id;
  const role = await roleOf(db, tenantId, input.roleKey);
  if (!role) {
    throw new AppError('unknown_role', `the organization has no role ${input.roleKey}`);
  }
  // An API key with invitations.manage must not hand out a role above its own scopes.
  assertGrantable(access, role.permissions);
  return db.transaction((tx) =>
    issueInvitation(tx, settings, access.principal, request, {
      organization: access.organization,
      roleName: role.name,
      invitation: { email: input.email, roleKey: input.roleKey, requireEmailMatch: input.requireEmailMatch },
      now,
    }),
  );
}

/**
 * The new invitation of create and resend, inside the caller's transaction: one pending
 * invitation per email (409 `invitation_already_pending`), the send budget spent, the row with a
 * fresh token and expiry, its `invitation.created` entry and, with email delivery enabled, its
 * email in the outbox. The role was checked by the caller.
 */
async function issueInvitation(
  tx: DbOrTx,
  settings: InvitationSettings,
  principal: Principal,
  request: RequestMeta,
  opts: {
    organization: Pick<OrganizationRow, 'id' | 'name'>;
    roleName: string;
    invitation: { email: string; roleKey: string; requireEmailMatch: boolean };
    /** The invitation this one replaces (resend), named in the audit entry. */
    resentFrom?: string;
    now: Date;
  },
): Promise<TCreateInvitationResponse> {
  const { organization, invitation: input, now } = opts;
  const tenantId = organization.id;
  const token = INVITATION_TOKEN_PREFIX + randomBase62(INVITATION_TOKEN_RANDOM_LENGTH);
  await lockInvitationEmail(tx, { tenantId, email: input.email });
  const pending = await findPendingInvitationByEmail(tx, { tenantId, email: input.email, now });
  if (pending) {
    // Its id, so the caller can resend or revoke that one (docs/api.md "Invitations").
    throw new AppError('invitation_already_pending', `${input.email} already has a pending invitation; resend or revoke that one`, {
      details: { invitationId: pending.id },
    });
  }
  // Counted once the invitation will be created: a refused duplicate sends nothing.
  await settings.throttle(input.email);
  const row = await insertInvitation(tx, {
    id: newId('invitation'),
    tenantId,
    email: input.email,
    roleKey: input.roleKey,
    tokenHash: sha256Hex(token),
    requireEmailMatch: input.requireEmailMatch,
    invitedByUserId: principal.kind === 'user' ? principal.user.id : null,
    expiresAt: new Date(now.getTime() + settings.ttlMs),
    createdAt: now,
  });
  await recordAudit(tx, principal, request, {
    tenantId,
    action: 'invitation.created',
    target: { type: 'invitation', id: row.id },
    summary: {
      email: row.email,
      roleKey: row.roleKey,
      requireEmailMatch: row.requireEmailMatch,
      expiresAt: row.expiresAt,
      ...(opts.resentFrom ? { resentFrom: opts.resentFrom } : {}),
    },
  });
  const inviteLink = inviteLinkOf(settings.publicUrl, token);
  let emailDelivery: TQueuedEmail = null;
  if (settings.email) {
    const queued = await queueInvitationEmail(tx, settings.email.secretBox, {
      tenantId,
      invitationId: row.id,
      roleKey: row.roleKey,
      recipient: row.email,
      content: invitationEmail({
        organizationName: organization.name,
        inviteLink,
        roleName: opts.roleName,
        expiresAt: row.expiresAt,
        inviterName: principal.kind === 'user' ? principal.user.name || principal.user.email : null,
      }),
    });
    emailDelivery = { id: queued.id, status: queued.status };
  }
  return { invitation: toInvitation(row, now), invitationToken: token, inviteLink, emailDelivery };
}

/** GET /v1/invitations: newest first, optionally of one status; never a token or its hash. */
export async function listInvitations(
  db: Db,
  { organization }: Access,
  input: TListInvitationsRequest,
  now = new Date(),
): Promise<{ data: TInvitation[]; nextCursor: string | null }> {
  const scope = `invitations:${organization.id}:${input.status ?? 'all'}`;
  const after = decodeCursor(scope, input.cursor);
  const rows = await listInvitationRows(db, { tenantId: organization.id, status: input.status, now, after, limit: input.limit + 1 });
  return toPage(scope, rows, input.limit, (row) => toInvitation(row, now));
}

/** GET /v1/invitations/{id}: one invitation of the organization; another organization's is 404. */
export async function getInvitation(
  db: Db,
  { organization }: Access,
  input: TGetInvitationRequest,
  now = new Date(),
): Promise<TInvitation> {
  const row = await findInvitationById(db, { tenantId: organization.id, id: input.id });
  if (!row) {
    throw new AppError('invitation_not_found', 'invitation not found');
  }
  return toInvitation(row, now);
}

/** The refusal for an invitation that can no longer be used, or undefined while it is pending. */
function unusable(row: InvitationRow, now: Date): AppError | undefined {
  switch (invitationStatus(row, now)) {
    case 'revoked':
      return new AppError('invitation_revoked', 'this invitation was revoked; ask for a new one');
    case 'accepted':
      return new AppError('invitation_already_accepted', 'this invitation has already been accepted');
    case 'expired':
      return new AppError('invitation_expired', 'this invitation has expired; ask for a new one');
    case 'pending':
      return undefined;
  }
}

/** POST /v1/invitations/{id}/revoke: a pending (or expired) invitation; its link stops working. */
export async function revokeInvitation(
  db: Db,
  access: Access,
  request: RequestMeta,
  input: TRevokeInvitationRequest,
  now = new Date(),
): Promise<TInvitation> {
  const tenantId = access.organization.id;
  return db.transaction(async (tx) => {
    const row = await findInvitationById(tx, { tenantId, id: input.id, forUpdate: true });
    if (!row) {
      throw new AppError('invitation_not_found', 'invitation not found');
    }
    const status = invitationStatus(row, now);
    if (status === 'revoked' || status === 'accepted') {
      throw unusable(row, now) as AppError;
    }
    const revoked = await revokeInvitationRow(tx, { tenantId, id: row.id, at: now });
    if (!revoked) {
      throw new Error('a locked invitation changed under its lock');
    }
    await recordAudit(tx, access.principal, request, {
      tenantId,
      action: 'invitation.revoked',
      target: { type: 'invitation', id: row.id },
      summary: { email: row.email, roleKey: row.roleKey, wasExpired: status === 'expired' },
    });
    return toInvitation(revoked, now);
  });
}

/**
 * POST /v1/invitations/{id}/resend: a new link for the same email, role and acceptance rule, in
 * one transaction: the old invitation, if still pending, is revoked (its link stops working and
 * its queued email is not sent), and a new one is issued exactly as create issues it (fresh token
 * and expiry, the send budget, the email in the outbox). Any refusal rolls back the lot, so the
 * old link keeps working. An accepted invitation is 409 `invitation_already_accepted`; a revoked
 * or expired one gets a new link too. The role is checked again: it may be gone since.
 */
export async function resendInvitation(
  db: Db,
  settings: InvitationSettings,
  access: Access,
  request: RequestMeta,
  input: TResendInvitationRequest,
  now = new Date(),
): Promise<TCreateInvitationResponse> {
  assertMembershipsManaged(access.organization);
  const tenantId = access.organization.id;
  return db.transaction(async (tx) => {
    const old = await findInvitationById(tx, { tenantId, id: input.id, forUpdate: true });
    if (!old) {
      throw new AppError('invitation_not_found', 'invitation not found');
    }
    const status = invitationStatus(old, now);
    if (status === 'accepted') {
      throw unusable(old, now) as AppError;
    }
    if (status === 'pending') {
      if (!(await revokeInvitationRow(tx, { tenantId, id: old.id, at: now }))) {
        throw new Error('a locked invitation changed under its lock');
      }
      await recordAudit(tx, access.principal, request, {
        tenantId,
        action: 'invitation.revoked',
        target: { type: 'invitation', id: old.id },
        summary: { email: old.email, roleKey: old.roleKey, wasExpired: false, resent: true },
      });
    }
    const role = await roleOf(tx, tenantId, old.roleKey);
    if (!role) {
      throw new AppError('unknown_role', `the organization no longer has the role ${old.roleKey}; invite again with another role`);
    }
    assertGrantable(access, role.permissions);
    return issueInvitation(tx, settings, access.principal, request, {
      organization: access.organization,
      roleName: role.name,
      invitation: { email: old.email, roleKey: old.roleKey, requireEmailMatch: old.requireEmailMatch },
      resentFrom: old.id,
      now,
    });
  });
}

/** Who the invitation is for may accept it: the same verified email, unless the admin waived that. */
async function checkInvitee(db: DbOrTx, row: InvitationRow, principal: UserPrincipal): Promise<void> {
  if (!row.requireEmailMatch) {
    return;
  }
  // The engine's word on the email, as of the last sign-in (never an unverified claim).
  const user = await findUserById(db, principal.user.id);
  if (!user || user.email !== row.email) {
    throw new AppError('invitation_email_mismatch', 'this invitation is for another email address; sign in with the invited one');
  }
  if (!user.emailVerified) {
    // The rule, said where it applies (docs/engines.md): an engine that never sends
    // email_verified: true can only be invited to without the email match.
    throw new AppError(
      'invitation_email_mismatch',
      'this invitation is for a verified email address, and your identity provider has not reported yours as verified (email_verified); verify it with the identity provider and sign in again, or ask the organization to invite you without requiring the email match',
    );
  }
}

export type InvitationPreview = {
  organization: Pick<OrganizationRow, 'id' | 'slug' | 'name'>;
  email: string;
  roleKey: string;
  roleName: string;
};

/**
 * What the hosted accept page shows before the user confirms: the same checks as accepting,
 * without changing anything. Throws the error accepting would answer.
 */
export async function previewInvitation(db: Db, principal: UserPrincipal, token: string, now = new Date()): Promise<InvitationPreview> {
  const row = await findInvitationByTokenHash(db, { tokenHash: sha256Hex(token) });
  if (!row) {
    throw new AppError('invitation_not_found', 'this invite link is not valid');
  }
  const refusal = unusable(row, now);
  if (refusal) {
    throw refusal;
  }
  await checkInvitee(db, row, principal);
  if (await isMember(db, { tenantId: row.tenantId, userId: principal.user.id })) {
    throw new AppError('already_member', 'you are already a member of this organization');
  }
  const organization = await findOrganizationById(db, row.tenantId);
  if (!organization) {
    throw new AppError('invitation_not_found', 'this invite link is not valid');
  }
  const role = await roleOf(db, row.tenantId, row.roleKey);
  return {
    organization: { id: organization.id, slug: organization.slug, name: organization.name },
    email: row.email,
    roleKey: row.roleKey,
    roleName: role?.name ?? row.roleKey,
  };
}

/**
 * POST /v1/invitations/accept (and the hosted accept page). The invitation row is locked first,
 * so of two racing accepts one adds the member and the other finds it accepted. The member, the
 * accepted mark and both audit entries commit together. `openWorkspace` (the hosted page) also
 * opens the organization in the accepting session, so the console lands there.
 */
export async function acceptInvitation(
  db: Db,
  principal: UserPrincipal,
  request: RequestMeta,
  input: { token: string },
  opts: { openWorkspace?: boolean; now?: Date } = {},
): Promise<TAcceptInvitationResponse> {
  const now = opts.now ?? new Date();
  return db.transaction(async (tx) => {
    const row = await findInvitationByTokenHash(tx, { tokenHash: sha256Hex(input.token), forUpdate: true });
    if (!row) {
      throw new AppError('invitation_not_found', 'this invite link is not valid');
    }
    const refusal = unusable(row, now);
    if (refusal) {
      throw refusal;
    }
    await checkInvitee(tx, row, principal);
    const organization = await findOrganizationById(tx, row.tenantId);
    if (!organization) {
      throw new AppError('invitation_not_found', 'this invite link is not valid');
    }
    // The organization had also added the person (POST /v1/users): accepting the link accepts that
    // membership, with the link's role; its seat was taken when it was created.
    const pending = await acceptInvitedMembership(tx, { tenantId: row.tenantId, userId: principal.user.id, roleKey: row.roleKey });
    if (!pending) {
      // Joining takes a seat: the subscription rule (402 while inactive, cancelled, expired, over a
      // limit, or with every seat taken) applies here, where the member is created, under the
      // organization's seat lock so that racing accepts cannot share the last seat.
      await claimSeat(tx, row.tenantId);
      if (!(await addOrgMember(tx, { tenantId: row.tenantId, userId: principal.user.id, roleKey: row.roleKey }))) {
        throw new AppError('already_member', 'you are already a member of this organization');
      }
    }
    const accepted = await markInvitationAccepted(tx, { tenantId: row.tenantId, id: row.id, userId: principal.user.id, at: now });
    if (!accepted) {
      throw new Error('a locked invitation changed under its lock');
    }
    await recordAudit(tx, principal, request, {
      tenantId: row.tenantId,
      action: 'invitation.accepted',
      target: { type: 'invitation', id: row.id },
      summary: { email: row.email, roleKey: row.roleKey, userId: principal.user.id },
    });
    await recordAudit(tx, principal, request, {
      tenantId: row.tenantId,
      action: 'member.added',
      target: { type: 'user', id: principal.user.id },
      summary: { roleKey: row.roleKey, via: 'invitation', invitationId: row.id },
    });
    if (opts.openWorkspace) {
      await setSessionActiveTenant(tx, { id: principal.session.id, userId: principal.user.id, tenantId: row.tenantId });
    }
    return {
      invitation: toInvitation(accepted, now),
      organization: { id: organization.id, slug: organization.slug, name: organization.name },
      roleKey: row.roleKey,
    };
  });
}

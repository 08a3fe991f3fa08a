import { randomBytes } from 'node:crypto';
import type { DbOrTx } from '@svc/db/client';
import { addJob } from '@svc/db/jobs';
import { leavePlatformWorkspace } from '@svc/db/queries/identity';
import { revokeOidcGrants } from '@svc/db/queries/oidc-provider';
import { revokeOrgSession } from '@svc/db/queries/org-sessions';
import { type EndedSignIn, endApplicationSignIns } from '@svc/db/queries/session-applications';
import { revokeSessionById } from '@svc/db/queries/sessions';
import { revokeSessionsOfOrgUser } from '@svc/db/queries/users';
import { recordEvents } from '@svc/db/queries/webhook-events';
import { backchannelLogoutJobKey } from '@svc/jobs/oidc/backchannel-logout';
import { sessionsEnded } from '../../metrics.ts';

/** What ends: svc sessions (and with them every application they signed in to), or some of their application sign-ins. */
export type SessionEnding =
  /** The person signed out (/auth/logout, the OpenID Provider's end_session). */
  | { kind: 'signed_out'; sessionId: string }
  /** An organization's admin revoked one of its sessions. */
  | { kind: 'revoked'; tenantId: string; sessionId: string }
  /** A platform admin suspended the person's account: every session of theirs ends. */
  | { kind: 'account_suspended'; tenantId: string; userId: string }
  /**
   * An organization's directory deactivated or deleted the person (docs/enterprise.md "Directory
   * sync"): every svc session of theirs ends, as for an account suspension, and the grants made
   * for the organization go; their account and other memberships stay.
   */
  | { kind: 'directory_deactivated'; tenantId: string; userId: string }
  /** The engine no longer puts the person in the platform admin group: the sessions opened as one end. */
  | { kind: 'platform_admin_left'; userId: string }
  /** The person's membership of an organization was suspended or removed: the sign-ins made for it end, not the sessions. */
  | { kind: 'membership_ended'; tenantId: string; userId: string }
  /** An application was disabled: every sign-in to it ends, not the sessions. */
  | { kind: 'application_disabled'; applicationId: string };

export type SessionsEnded = {
  /** The svc sessions that were live and are revoked now. */
  sessionIds: string[];
  /** The application sign-ins that ended. */
  signIns: EndedSignIn[];
  /** `platform_admin_left` only: the person was a member of the platform workspace until now. */
  leftPlatformWorkspace: boolean;
};

/**
 * The one way a svc session, or an application's sign-in through it, ends. In one transaction
 * (the caller's, when it passes one):
 *
 * - the sessions are revoked (every API process reads the row on each request, and the OpenID
 *   Provider refuses a refresh token whose sid is no longer live: invalid_grant), or, for a
 *   membership or an application, the grants concerned are deleted with their tokens;
 * - their application sign-ins (session_applications) are marked ended;
 * - one `oidc:backchannel_logout` job is queued per ended sign-in whose application takes
 *   back-channel logout tokens (packages/jobs oidc/backchannel-logout.ts signs and sends it,
 *   retrying like a webhook delivery);
 * - `session.ended` is recorded for each organization concerned (the one the grant spoke for,
 *   else the application's), once per session.
 *
 * Everything exists if and only if the change commits. Every path that ends a session comes
 * here: signing out, admin revocation, account suspension, leaving the platform admin group,
 * membership suspension or removal, a directory's deactivation, disabling an application.
 */
export async function endSessions(db: DbOrTx, ending: SessionEnding, at = new Date()): Promise<SessionsEnded> {
  const ended = await db.transaction(async (tx) => {
    let sessionIds: string[] = [];
    let signIns: EndedSignIn[];
    let leftPlatformWorkspace = false;
    switch (ending.kind) {
      case 'signed_out':
        sessionIds = await revokeSessionById(tx, { id: ending.sessionId, at });
        break;
      case 'revoked':
        sessionIds = await revokeOrgSession(tx, { tenantId: ending.tenantId, id: ending.sessionId, at });
        break;
      case 'account_suspended':
        sessionIds = await revokeSessionsOfOrgUser(tx, { tenantId: ending.tenantId, userId: ending.userId, at });
        break;
      case 'directory_deactivated':
        sessionIds = await revokeSessionsOfOrgUser(tx, { tenantId: ending.tenantId, userId: ending.userId, at });
        await revokeOidcGrants(tx, { accountId: ending.userId, organizationId: ending.tenantId });
        break;
      case 'platform_admin_left': {
        const left = await leavePlatformWorkspace(tx, { userId: ending.userId, at });
        sessionIds = left.sessionIds;
        leftPlatformWorkspace = left.membershipsRemoved > 0;
        break;
      }
      case 'membership_ended':
        await revokeOidcGrants(tx, { accountId: ending.userId, organizationId: ending.tenantId });
        break;
      case 'application_disabled':
        await revokeOidcGrants(tx, { clientId: ending.applicationId });
        break;
    }
    if (ending.kind === 'membership_ended') {
      signIns = await endApplicationSignIns(tx, { userId: ending.userId, organizationId: ending.tenantId }, at);
    } else if (ending.kind === 'application_disabled') {
      signIns = await endApplicationSignIns(tx, { applicationId: ending.applicationId }, at);
    } else {
      signIns = await endApplicationSignIns(tx, { sessionIds }, at);
    }
    for (const signIn of signIns) {
      if (signIn.backchannelLogout) {
        await addJob(
          tx,
          'oidc:backchannel_logout',
          {
            sessionId: signIn.sessionId,
            userId: signIn.userId,
            applicationId: signIn.applicationId,
            jti: randomBytes(16).toString('base64url'),
            attempt: 1,
          },
          { jobKey: backchannelLogoutJobKey(signIn) },
        );
      }
    }
    await recordEvents(tx, sessionEndedEvents(signIns, ending.kind, at));
    return { sessionIds, signIns, leftPlatformWorkspace };
  });
  if (ended.sessionIds.length > 0) {
    sessionsEnded.inc({ reason: ending.kind }, ended.sessionIds.length);
  }
  return ended;
}

/** One `session.ended` per session and organization told of it, listing the applications whose sign-in ended. */
function sessionEndedEvents(signIns: EndedSignIn[], reason: SessionEnding['kind'], at: Date) {
  const byKey = new Map<string, { tenantId: string; sessionId: string; userId: string; applicationIds: string[] }>();
  for (const s of signIns) {
    const key = `${s.sessionId} ${s.organizationId}`;
    const entry = byKey.get(key) ?? { tenantId: s.organizationId, sessionId: s.sessionId, userId: s.userId, applicationIds: [] };
    entry.applicationIds.push(s.applicationId);
    byKey.set(key, entry);
  }
  return [...byKey.values()].map((e) => ({
    tenantId: e.tenantId,
    type: 'session.ended',
    data: {
      object: 'session',
      id: e.sessionId,
      organizationId: e.tenantId,
      userId: e.userId,
      applicationIds: e.applicationIds,
      reason,
      endedAt: at.toISOString(),
    },
  }));
}

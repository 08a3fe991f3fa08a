import { addJob, ZTaskPayloads } from '@svc/db/jobs';
import { findCurrentSigningKey, openSigningKey } from '@svc/db/queries/oidc-provider';
import { findBackchannelLogoutTarget } from '@svc/db/queries/session-applications';
import type { JobHelpers } from 'graphile-worker';
import { importJWK, SignJWT } from 'jose';
import type { JobContext } from '../context.ts';
import { stateAfter } from '../webhooks/dispatch.ts';

/** The event a logout token carries (OpenID Connect Back-Channel Logout 1.0, section 2.4). */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';
/** A logout token's lifetime: it is sent at once, and again on each retry with a fresh one. */
export const LOGOUT_TOKEN_TTL_SECONDS = 120;

/** One chain of attempts per session and application: a rerun after a crash replaces the pending attempt instead of starting a second chain. */
export function backchannelLogoutJobKey(signIn: { sessionId: string; applicationId: string }): string {
  return `oidc:backchannel_logout:${signIn.sessionId}:${signIn.applicationId}`;
}

/**
 * `oidc:backchannel_logout`: tells an application that a svc session's sign-in to it ended
 * (queued by endSessions in apps/api, in the transaction that ended it). An OpenID Connect
 * Back-Channel Logout 1.0 logout token (typ `logout+jwt`; iss = PUBLIC_URL, aud = the client id,
 * sub = the usr_ id, sid = the svc session id, the back-channel logout event, no nonce), signed
 * with svc's current OpenID Provider signing key, POSTed form-encoded as `logout_token` to the
 * application's backchannelLogoutUrl as it is now.
 *
 * Sent through the webhook sender (SSRF rules, no redirects, timeouts) and retried on the
 * webhook schedule (WEBHOOK_RETRY_SCHEDULE) by queueing the next attempt as a new job at its
 * time. At least once: the token's jti is the same on every attempt of a chain, so the
 * application can tell a repeat.
 */
export async function sendBackchannelLogout(payload: unknown, ctx: JobContext, helpers: Pick<JobHelpers, 'abortSignal'>): Promise<void> {
  const job = ZTaskPayloads['oidc:backchannel_logout'].parse(payload);
  const log = { sessionId: job.sessionId, applicationId: job.applicationId, attempt: job.attempt };
  const target = await findBackchannelLogoutTarget(ctx.db, job.applicationId);
  if (!target) {
    ctx.logger.info(log, 'back-channel logout not sent: the application is gone or takes no logout tokens now');
    return;
  }
  if (!ctx.oidc) {
    // Retried by Graphile until a worker that knows the issuer runs it.
    throw new Error('back-channel logout needs the OpenID Provider issuer (PUBLIC_URL) in the worker');
  }
  const row = await findCurrentSigningKey(ctx.db);
  if (!row) {
    throw new Error('no current OpenID Provider signing key');
  }
  const jwk = openSigningKey(ctx.secretBox, row);
  const key = await importJWK(jwk, row.alg);
  const now = Math.floor(Date.now() / 1000);
  const token = await new SignJWT({ sid: job.sessionId, events: { [BACKCHANNEL_LOGOUT_EVENT]: {} } })
    .setProtectedHeader({ alg: row.alg, kid: row.kid, typ: 'logout+jwt' })
    .setIssuer(ctx.oidc.issuer)
    .setAudience(job.applicationId)
    .setSubject(job.userId)
    .setIssuedAt(now)
    .setExpirationTime(now + LOGOUT_TOKEN_TTL_SECONDS)
    .setJti(job.jti)
    .sign(key);
  const sent = await ctx.webhookSender.send({
    url: target.url,
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'cache-control': 'no-store' },
    body: new URLSearchParams({ logout_token: token }).toString(),
    signal: helpers.abortSignal,
  });
  const next = stateAfter(sent.outcome, job.attempt, ctx.webhooks.retryScheduleMs);
  const outcome = { ...log, outcome: sent.outcome, statusCode: sent.statusCode, error: sent.error };
  if (next.status === 'succeeded') {
    ctx.logger.info(outcome, 'back-channel logout delivered');
    return;
  }
  if (next.retryInMs === null) {
    ctx.logger.error(outcome, 'back-channel logout failed for good');
    return;
  }
  await addJob(
    ctx.db,
    'oidc:backchannel_logout',
    { ...job, attempt: job.attempt + 1 },
    { runAt: new Date(Date.now() + next.retryInMs), jobKey: backchannelLogoutJobKey(job) },
  );
  ctx.logger.info({ ...outcome, retryInMs: next.retryInMs }, 'back-channel logout not delivered; retrying');
}

import type { InvitationPreview } from '../../modules/invitations/service.ts';
import { escapeHtml, hostedPage } from '../../modules/shared/hosted-page.ts';

const RETURN_HERE = `return_to=${encodeURIComponent('/invitations/accept')}`;

/** Anonymous: the invitation is kept (in a cookie) while the invitee signs in or signs up. */
export function invitationSignInPage(opts: { signUp?: boolean } = {}): string {
  // "Create an account" only where the engine offers sign-up (docs/engines.md).
  const signUp = opts.signUp !== false;
  return hostedPage(
    'You have an invitation',
    `<h1 data-testid="hosted-heading">You have an invitation</h1>
<p>${signUp ? 'Sign in, or create an account, to see and accept it.' : 'Sign in to see and accept it.'}</p>
<a class="button" href="/signin?${RETURN_HERE}" data-testid="invitation-sign-in">Sign in</a>
${signUp ? `<a class="button secondary" href="/signup?${RETURN_HERE}" data-testid="invitation-sign-up">Create an account</a>` : ''}`,
  );
}

/** Signed in: what accepting does, an Accept button (a same-origin form POST) and a way out. */
export function invitationAcceptPage(preview: InvitationPreview, signedInAs: string): string {
  return hostedPage(
    `Join ${preview.organization.name}`,
    `<h1 data-testid="hosted-heading">Join <span data-testid="invitation-organization">${escapeHtml(preview.organization.name)}</span></h1>
<p>You were invited as <strong data-testid="invitation-role">${escapeHtml(preview.roleName)}</strong>
<span class="muted">(${escapeHtml(preview.roleKey)})</span>.</p>
<p class="muted">Signed in as <span data-testid="invitation-signed-in-as">${escapeHtml(signedInAs)}</span>.</p>
<form method="post" action="/invitations/accept"><button type="submit" data-testid="accept-invitation">Accept invitation</button></form>
<form method="post" action="/auth/logout"><button type="submit" class="button secondary" data-testid="invitation-sign-out">Not you? Sign out</button></form>`,
  );
}

/** Why the invitation cannot be accepted, with the error code (as every svc error carries one). */
export function invitationErrorPage(code: string, message: string, opts: { verifyEmail?: boolean } = {}): string {
  // The verification link only where the engine has such a page (docs/engines.md).
  const verify =
    opts.verifyEmail !== false
      ? `<a class="button secondary" href="/auth/verify-email?${RETURN_HERE}" data-testid="invitation-verify-email">Verify your email</a>`
      : '';
  const link =
    code === 'invitation_email_mismatch'
      ? `<form method="post" action="/auth/logout"><button type="submit" class="button secondary" data-testid="invitation-sign-out">Sign out and use another account</button></form>
${verify}`
      : '';
  return hostedPage(
    'Invitation',
    `<h1 data-testid="hosted-heading">This invitation cannot be accepted</h1>
<p data-testid="invitation-error-message">${escapeHtml(message)}</p>
<p class="muted">Code: <code data-testid="invitation-error-code">${escapeHtml(code)}</code></p>
${link}<a class="button" href="/auth/console/" data-testid="invitation-console">Open the console</a>`,
  );
}

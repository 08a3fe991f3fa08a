import { escapeHtml, hostedPage } from '../auth/pages.ts';
import { CLAIM_PATH, type ClaimableApplication, type ClaimedApplication } from './claim.ts';

/** Signed in: which workspace gets the application, its name there, and a Claim button (same-origin form POST). */
export function claimPage(
  application: ClaimableApplication,
  workspaces: { id: string; slug: string; name: string }[],
  signedInAs: string,
): string {
  const name = escapeHtml(application.name);
  const choose =
    workspaces.length === 0
      ? `<p data-testid="claim-no-workspace">You are not an org admin of any workspace. Create one in the console, then open the claim link again.</p>
<a class="button" href="/auth/console/" data-testid="claim-console">Open the console</a>`
      : `<form method="post" action="${CLAIM_PATH}">
<fieldset><legend>Workspace</legend>
${workspaces
  .map(
    (w, i) =>
      `<div class="choice"><input type="radio" id="ws-${i}" name="organization" value="${escapeHtml(w.id)}" data-testid="claim-workspace" data-slug="${escapeHtml(w.slug)}"${i === 0 ? ' checked' : ''}> <label for="ws-${i}">${escapeHtml(w.name)} <span class="muted">(${escapeHtml(w.slug)})</span></label></div>`,
  )
  .join('\n')}
</fieldset>
<label for="claim-name">Application name</label><input id="claim-name" name="name" maxlength="100" value="${name}" data-testid="claim-name">
<button type="submit" data-testid="claim-confirm">Claim application</button></form>`;
  return hostedPage(
    `Claim ${application.name}`,
    `<h1 data-testid="hosted-heading">Claim this development application</h1>
<p>It moves into the workspace you choose with the same application id (the OIDC client id) <code data-testid="claim-client-id">${escapeHtml(application.id)}</code> and the same publishable key <code data-testid="claim-publishable-key">${escapeHtml(application.publishableKey)}</code>, so the app built against it keeps working. Its secret key is created now and shown once.</p>
<p class="muted"><span data-testid="claim-signed-in-people">${application.signedInPeople}</span> ${application.signedInPeople === 1 ? 'person' : 'people'} signed in to it during development: each becomes a member of that workspace (role org_member) unless already one.</p>
${choose}
<p class="muted">Signed in as <span data-testid="claim-signed-in-as">${escapeHtml(signedInAs)}</span>.</p>
<form method="post" action="/auth/logout"><button type="submit" class="button secondary" data-testid="claim-sign-out">Not you? Sign out</button></form>`,
  );
}

/** After the claim: the keys, the secret once, and what to do next. */
export function claimedPage(claimed: ClaimedApplication): string {
  const { application, organization } = claimed;
  return hostedPage(
    'Application claimed',
    `<h1 data-testid="hosted-heading">Application claimed</h1>
<p><strong data-testid="claimed-name">${escapeHtml(application.name)}</strong> now belongs to <strong data-testid="claimed-workspace">${escapeHtml(organization.name)}</strong>.</p>
<table>
<tr><th>Client id</th><td><code data-testid="claimed-client-id">${escapeHtml(application.id)}</code></td></tr>
<tr><th>Publishable key</th><td><code data-testid="claimed-publishable-key">${escapeHtml(application.publishableKey)}</code></td></tr>
<tr><th>Secret key</th><td><code data-testid="claimed-secret-key">${escapeHtml(claimed.secretKey)}</code></td></tr>
</table>
<p><strong>Copy the secret key now: it is shown only this once.</strong> Keep it on your server (SVC_SECRET_KEY); never commit it.</p>
<p class="muted"><span data-testid="claimed-members-added">${claimed.membersAdded}</span> ${claimed.membersAdded === 1 ? 'person who signed in during development is now a member' : 'people who signed in during development are now members'} of the workspace. Register your redirect URLs and JavaScript origins on the application in the console: it no longer accepts any loopback redirect.</p>
<a class="button" href="/auth/console/applications" data-testid="claimed-console">Open the application in the console</a>`,
  );
}

/** Why the application cannot be claimed, with the error code. */
export function claimErrorPage(code: string, message: string): string {
  return hostedPage(
    'Claim',
    `<h1 data-testid="hosted-heading">This application cannot be claimed</h1>
<p data-testid="claim-error-message">${escapeHtml(message)}</p>
<p class="muted">Code: <code data-testid="claim-error-code">${escapeHtml(code)}</code></p>
<a class="button" href="/auth/console/" data-testid="claim-console">Open the console</a>`,
  );
}

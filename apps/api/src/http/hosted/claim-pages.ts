import { CLAIM_PATH, type ClaimableApplication, type ClaimedApplication } from '../../modules/applications/claim.ts';
import { consoleApplicationPath } from '../../modules/applications/console-link.ts';
import { escapeHtml, hostedPage } from '../../modules/shared/hosted-page.ts';
import { COPY_SCRIPT_TAG } from '../copy-button.ts';

type Urls = ClaimableApplication['urls'];

/** The URLs the claim keeps registered, one line per kind that has any; testids for each value. */
function urlList(urls: Urls): string {
  const rows = (
    [
      ['Redirect URLs', 'redirectUrls', urls.redirectUrls],
      ['Post-logout redirect URLs', 'postLogoutRedirectUrls', urls.postLogoutRedirectUrls],
      ['Allowed origins', 'allowedOrigins', urls.allowedOrigins],
    ] as const
  ).filter(([, , values]) => values.length > 0);
  return `<table data-testid="claim-urls">${rows
    .map(
      ([label, kind, values]) =>
        `<tr><th>${label}</th><td>${values.map((v) => `<code data-testid="claim-url" data-kind="${kind}">${escapeHtml(v)}</code>`).join(' ')}</td></tr>`,
    )
    .join('\n')}</table>`;
}

function hasUrls(urls: Urls): boolean {
  return urls.redirectUrls.length + urls.postLogoutRedirectUrls.length + urls.allowedOrigins.length > 0;
}

/**
 * The choice of client type (modules/applications/claim.ts ClaimClientType), required and not preselected: a server
 * app that keeps getting no secret, or a browser app asked for one, would stop signing in.
 */
const CLIENT_TYPE_CHOICE = `<fieldset><legend>How does your app sign in?</legend>
<div class="choice stacked"><input type="radio" id="ct-confidential" name="client_type" value="confidential" required data-testid="claim-client-type-confidential"> <label for="ct-confidential"><strong>It has a server</strong> (Express, Next.js, Flask, FastAPI, Django, Laravel, Rails, a REST server): a confidential client. After the claim, paste the secret key shown then into <code>SVC_SECRET_KEY</code> in the app's environment file and restart the app.</label></div>
<div class="choice stacked"><input type="radio" id="ct-public" name="client_type" value="public" required data-testid="claim-client-type-public"> <label for="ct-public"><strong>It runs only in the browser</strong> (React or another single-page app): a public client, PKCE alone. Nothing changes in the app.</label></div>
</fieldset>`;

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
${CLIENT_TYPE_CHOICE}
<button type="submit" data-testid="claim-confirm">Claim application</button></form>`;
  return hostedPage(
    `Claim ${application.name}`,
    `<h1 data-testid="hosted-heading">Claim this development application</h1>
<p>It moves into the workspace you choose with the same application id (the OIDC client id) <code data-testid="claim-client-id">${escapeHtml(application.id)}</code> and the same publishable key <code data-testid="claim-publishable-key">${escapeHtml(application.publishableKey)}</code>, so the app built against it keeps working. Its secret key is created now and shown once.</p>
${
  hasUrls(application.urls)
    ? `<p>The apps built against it used these URLs; the claim registers them on the application, so they keep working:</p>${urlList(application.urls)}`
    : '<p data-testid="claim-no-urls">No app has signed in through it yet: after the claim, register your app\'s redirect URL, post-logout redirect URL and allowed origins on the application in the console.</p>'
}
<p class="muted"><span data-testid="claim-signed-in-people">${application.signedInPeople}</span> ${application.signedInPeople === 1 ? 'person' : 'people'} signed in to it during development: each becomes a member of that workspace (role org_member) unless already one.</p>
${choose}
<p class="muted">Signed in as <span data-testid="claim-signed-in-as">${escapeHtml(signedInAs)}</span>.</p>
<form method="post" action="/auth/logout"><button type="submit" class="button secondary" data-testid="claim-sign-out">Not you? Sign out</button></form>`,
  );
}

/**
 * After the claim: the keys, the secret once (with a copy button), and the steps that keep the
 * app signing in, which depend on the client type chosen (the same steps the agent context gives
 * before the claim).
 */
export function claimedPage(claimed: ClaimedApplication): string {
  const { application, organization } = claimed;
  const confidential = application.clientType === 'confidential';
  const urls = {
    redirectUrls: application.redirectUrls,
    postLogoutRedirectUrls: application.postLogoutRedirectUrls,
    allowedOrigins: application.allowedOrigins,
  };
  const consoleLink = consoleApplicationPath(application.id);
  const steps = confidential
    ? [
        `Paste the secret key after <code>SVC_SECRET_KEY=</code> in your app's environment file (<code>.env</code>; <code>.env.local</code> for Next.js), on the server only. Never commit it.`,
        'Restart the app. It now signs in as a confidential client with the secret key; until it has the key, sign-ins fail with <code>invalid_client</code>.',
      ]
    : [
        'Nothing changes in your app: it stays a public client (PKCE alone) with the same client id.',
        'Keep the secret key for server-side calls to svc (<code>GET /v1/backend/application</code>); never put it in the browser app.',
      ];
  steps.push(
    hasUrls(urls)
      ? `The URLs your app used while keyless are registered on the application (below). A URL it has not used yet (another port, your production URL) is registered on <a href="${escapeHtml(consoleLink)}" data-testid="claimed-register-link">the application's page in the console</a>.`
      : `Register your app's redirect URL, post-logout redirect URL and allowed origins on <a href="${escapeHtml(consoleLink)}" data-testid="claimed-register-link">the application's page in the console</a>: the application no longer accepts any loopback URL.`,
  );
  return hostedPage(
    'Application claimed',
    `<h1 data-testid="hosted-heading">Application claimed</h1>
<p><strong data-testid="claimed-name">${escapeHtml(application.name)}</strong> now belongs to <strong data-testid="claimed-workspace">${escapeHtml(organization.name)}</strong>, as a <strong data-testid="claimed-client-type" data-client-type="${application.clientType}">${confidential ? 'confidential client (an app with a server)' : 'public client (a browser-only app)'}</strong>.</p>
<table>
<tr><th>Client id</th><td><code data-testid="claimed-client-id">${escapeHtml(application.id)}</code></td></tr>
<tr><th>Publishable key</th><td><code data-testid="claimed-publishable-key">${escapeHtml(application.publishableKey)}</code></td></tr>
<tr><th>Secret key</th><td><code id="claimed-secret-key" data-testid="claimed-secret-key">${escapeHtml(claimed.secretKey)}</code><br><button type="button" class="copy secondary button" data-copy="claimed-secret-key" data-testid="claimed-secret-copy">Copy</button></td></tr>
</table>
<p><strong>Copy the secret key now: it is shown only this once.</strong> svc keeps only its hash; rotate it in the console if it is lost.</p>
<h2>Keep your app signing in</h2>
<ol data-testid="claimed-steps">${steps.map((step) => `<li data-testid="claimed-step">${step}</li>`).join('')}</ol>
${hasUrls(urls) ? urlList(urls) : ''}
<p class="muted"><span data-testid="claimed-members-added">${claimed.membersAdded}</span> ${claimed.membersAdded === 1 ? 'person who signed in during development is now a member' : 'people who signed in during development are now members'} of the workspace.</p>
<a class="button" href="${escapeHtml(consoleLink)}" data-testid="claimed-console">Open the application in the console</a>
${COPY_SCRIPT_TAG}`,
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

import type { ConsentView } from '../../modules/oidc-provider/consent.ts';
import { escapeHtml, FAVICON_PATH, hostedPage } from '../../modules/shared/hosted-page.ts';

/**
 * The application a hosted sign-in is for, as its page shows it: the application of the OpenID
 * Connect authorization request, or of the publishable key that came along. Its name and logo
 * URL are the application's own settings: escaped wherever they are written.
 */
export type ApplicationBrand = { name: string; logoUrl: string | null };

/** The side of the page that says who the sign-in is for: the application's logo, else its initial; svc's mark without one. */
function brandMark(application: ApplicationBrand | undefined): string {
  if (!application) {
    return `<div class="brand"><img class="brand__logo" src="${FAVICON_PATH}" alt="" width="48" height="48"></div>`;
  }
  if (application.logoUrl) {
    // No referrer: the logo's host learns nothing of the sign-in (the interaction's URL).
    return `<div class="brand"><img class="brand__logo" src="${escapeHtml(application.logoUrl)}" alt="${escapeHtml(`${application.name} logo`)}" width="48" height="48" referrerpolicy="no-referrer" data-testid="application-logo"></div>`;
  }
  const initial = Array.from(application.name.trim())[0]?.toUpperCase() ?? '';
  return `<div class="brand"><span class="brand__initial" aria-hidden="true">${escapeHtml(initial)}</span></div>`;
}

/**
 * /signin and /signup: an email form (the engine's password flow, with the email as login_hint)
 * and a social button, saying which application the person signs in to (its name and logo), or
 * svc when none asked.
 */
export function signInPage(opts: {
  intent: 'signin' | 'signup';
  application?: ApplicationBrand;
  returnTo?: string;
  publishableKey?: string;
  /** The social button's provider, or null when the engine offers none (no button). */
  socialProvider: string | null;
  /** The engine offers sign-up (else no "Create an account" link). */
  signUp?: boolean;
  /** The person must sign in at the engine again, even with a session there (prompt=login). */
  reauthenticate?: boolean;
}): string {
  const hidden = [
    opts.reauthenticate ? '<input type="hidden" name="prompt" value="login">' : '',
    opts.returnTo ? `<input type="hidden" name="return_to" value="${escapeHtml(opts.returnTo)}">` : '',
    opts.publishableKey ? `<input type="hidden" name="publishable_key" value="${escapeHtml(opts.publishableKey)}">` : '',
    opts.intent === 'signup' ? '<input type="hidden" name="intent" value="signup">' : '',
  ].join('');
  // Every way off this page keeps where the person was going and which application sent them.
  const carried = new URLSearchParams();
  if (opts.returnTo) {
    carried.set('return_to', opts.returnTo);
  }
  if (opts.publishableKey) {
    carried.set('publishable_key', opts.publishableKey);
  }
  const social = new URLSearchParams([['method', 'social'], ...carried]);
  if (opts.reauthenticate) {
    social.set('prompt', 'login');
  }
  const switchQuery = carried.size > 0 ? `?${escapeHtml(carried.toString())}` : '';
  const to = opts.application?.name ?? 'svc';
  const heading = opts.intent === 'signup' ? `Sign up for ${to}` : `Sign in to ${to}`;
  // A full URL (a generic engine's social page) has no name to show: its host stands for it.
  const providerName =
    opts.socialProvider && /^https?:\/\//i.test(opts.socialProvider) ? new URL(opts.socialProvider).host : opts.socialProvider;
  const provider = providerName ? escapeHtml(providerName.charAt(0).toUpperCase() + providerName.slice(1)) : undefined;
  const socialButton = provider
    ? `<a class="button secondary" data-testid="continue-social" href="/auth/login?${escapeHtml(social.toString())}">Continue with ${provider}</a>\n`
    : '';
  const other =
    opts.intent === 'signup'
      ? `<p class="muted">Already have an account? <a href="/signin${switchQuery}" data-testid="switch-intent">Sign in</a></p>`
      : opts.signUp === false
        ? ''
        : `<p class="muted">New here? <a href="/signup${switchQuery}" data-testid="switch-intent">Create an account</a></p>`;
  return hostedPage(
    heading,
    `${brandMark(opts.application)}<h1 data-testid="hosted-heading">${escapeHtml(heading)}</h1>
<form method="get" action="/auth/login">${hidden}
<label for="email">Email</label><input id="email" name="login_hint" type="email" autocomplete="email" required>
<button type="submit" data-testid="continue-email">Continue with email</button></form>
${socialButton}${other}<p class="muted">Your password is entered at the identity provider, never here.</p>`,
  );
}

/** The hosted organization choice of an authorization request: one button per organization (no scripts). */
export function organizationPage(
  action: string,
  application: ApplicationBrand,
  memberships: { organization: { id: string; name: string; slug: string; kind: string } }[],
): string {
  const buttons = memberships
    .filter((m) => m.organization.kind === 'tenant')
    .map(
      (m) =>
        `<button type="submit" name="organization" value="${escapeHtml(m.organization.id)}" data-testid="pick-organization" data-slug="${escapeHtml(m.organization.slug)}">${escapeHtml(m.organization.name)}</button>`,
    )
    .join('');
  const name = escapeHtml(application.name);
  return hostedPage(
    'Choose an organization',
    `${brandMark(application)}<h1 data-testid="hosted-heading">Continue to ${name} as</h1><form method="post" action="${escapeHtml(action)}">${buttons}</form><p class="muted">${name} will act for the organization you choose.</p>`,
  );
}

/**
 * The consent page of a third-party client's authorization (docs/oidc.md, "Consent"): who asks
 * (the name and logo its metadata document gives, and, prominently, the host of its client_id
 * URL, the one thing about it svc can vouch for), the organization it will act for, each
 * permission in words, and Allow / Deny. A permission the person does not hold there is shown as
 * not grantable: allowing never grants it. No scripts; the form posts to svc itself.
 */
export function consentPage(action: string, view: ConsentView): string {
  const name = escapeHtml(view.client.name);
  const host = escapeHtml(view.client.host);
  const scopes = view.scopes.map((s) => `<li data-testid="consent-scope" data-scope="${escapeHtml(s.scope)}">${escapeHtml(s.words)}</li>`);
  const apis = view.apis.map((api) => {
    const items = api.permissions.map((p) => {
      const words = p.description
        ? `${escapeHtml(p.description)} <code>${escapeHtml(p.name)}</code>`
        : `<code>${escapeHtml(p.name)}</code>`;
      return p.grantable
        ? `<li data-testid="consent-permission" data-permission="${escapeHtml(p.name)}">${words}</li>`
        : `<li class="muted" data-testid="consent-not-grantable" data-permission="${escapeHtml(p.name)}"><s>${words}</s> (you do not hold this permission in ${escapeHtml(view.organization.name)}, so it cannot be granted)</li>`;
    });
    return `<p>On <strong>${escapeHtml(api.name)}</strong> <span class="muted">(${escapeHtml(api.identifier)})</span>:</p><ul>${items.join('')}</ul>`;
  });
  return hostedPage(
    `Allow ${view.client.name} access?`,
    `${brandMark(view.client)}<h1 data-testid="hosted-heading">Allow ${name} to act for you?</h1>` +
      (view.client.registered
        ? `<p>This client registered itself with this service: nobody has checked who it is. It sends your answer to <strong data-testid="consent-client-host">${host}</strong>. Allow it only if you started this yourself and trust ${host}.</p>`
        : `<p>This client is <strong data-testid="consent-client-host">${host}</strong>, not an application of this service. Allow it only if you trust ${host}.</p>`) +
      `<p>It will act for you in <strong data-testid="consent-organization">${escapeHtml(view.organization.name)}</strong>.</p>` +
      (scopes.length > 0 ? `<p>It asks to:</p><ul>${scopes.join('')}</ul>` : '') +
      apis.join('') +
      `<form method="post" action="${escapeHtml(action)}"><button type="submit" name="decision" value="allow" data-testid="consent-allow">Allow</button> <button type="submit" name="decision" value="deny" class="button secondary" data-testid="consent-deny">Deny</button></form>`,
  );
}

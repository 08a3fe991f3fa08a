import { escapeHtml, hostedPage } from '../shared/hosted-page.ts';

/** The longest sent URL the page repeats; past it, the start and an ellipsis. */
const SHOWN_URL_LENGTH = 300;

/** The URL an application sent that its registration does not allow, and where it goes. */
export type UnregisteredUrl = {
  kind: 'redirect' | 'post_logout';
  /** As the request sent it: shown as text, never as a link. */
  url: string;
};

/**
 * Where the page may point a developer to register the URL: only outside production, where
 * whoever reaches the page is the app's developer. `keyless`: the keyless development
 * application, which takes any loopback URL and no other, and has no console page until claimed.
 */
export type RegisterHint =
  | { kind: 'application'; consolePath: string; registered: readonly string[] }
  | { kind: 'keyless' }
  | { kind: 'none' };

const LIST_NAME: Record<UnregisteredUrl['kind'], string> = {
  redirect: 'Redirect URLs',
  post_logout: 'Post-logout redirect URLs',
};

function shown(url: string): string {
  return url.length > SHOWN_URL_LENGTH ? `${url.slice(0, SHOWN_URL_LENGTH)}…` : url;
}

/**
 * svc's page for an OpenID Connect request it cannot redirect back from (an unknown client, an
 * unregistered redirect_uri or post_logout_redirect_uri, a bad id_token_hint): nothing safe to
 * redirect to, so an explanation on svc. An unregistered URL is named (as text: it is whatever
 * the request carried, never a link, so the page sends nobody there); in development it also
 * says where to register it, linking to the application's page in svc's console (a path on svc,
 * built from the client's id, never from the request's URLs).
 */
export function oidcErrorPage(
  out: { error: string; error_description?: string | undefined },
  what: 'sign-in' | 'sign-out',
  unregistered?: { sent: UnregisteredUrl; hint: RegisterHint },
): string {
  const title = `This ${what} request cannot be completed`;
  const detail = out.error_description ?? out.error;
  let body = `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(detail)}</p>`;
  if (unregistered) {
    const { sent, hint } = unregistered;
    const noun = sent.kind === 'redirect' ? 'redirect URI' : 'post-logout redirect URI';
    body += `<p>The application sent the ${noun} <code data-testid="unregistered-url">${escapeHtml(shown(sent.url))}</code>, which is not registered on it.</p>`;
    if (hint.kind === 'application') {
      body += `<p data-testid="register-hint">Register it exactly under <strong>${LIST_NAME[sent.kind]}</strong> on <a href="${escapeHtml(hint.consolePath)}" data-testid="register-link">the application's page in the svc console</a>, then start again.${
        hint.registered.length > 0
          ? ` Registered now: ${hint.registered.map((u) => `<code data-testid="registered-url">${escapeHtml(shown(u))}</code>`).join(', ')}.`
          : ' None is registered yet.'
      }</p>`;
    } else if (hint.kind === 'keyless') {
      body +=
        '<p data-testid="register-hint">The keyless development application accepts only http URLs on this machine (localhost, 127.0.0.1 or [::1], any port and path). To use another URL, claim the application (its claim link is in the agent context and in client config with keyless=1) and register the URL on it in the svc console.</p>';
    }
  }
  body += `<p class="muted">Error: ${escapeHtml(out.error)}. Go back to the application and start again; if this keeps happening, tell its developers.</p>`;
  return hostedPage(title, body);
}

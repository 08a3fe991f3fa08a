import { FAVICON_LINK } from '../../http/favicon.ts';

/** Escapes text for HTML element and attribute content. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f7fb;color:#1f2430}
main{max-width:420px;margin:10vh auto;padding:32px;background:#fff;border-radius:12px;box-shadow:0 2px 12px rgba(0,0,0,.06)}
h1{font-size:1.5rem;margin:0 0 1rem}label{display:block;font-weight:600;margin:.75rem 0 .25rem}
input{width:100%;box-sizing:border-box;padding:.6rem;border:1px solid #c9cedb;border-radius:8px;font:inherit}
button,.button{display:block;width:100%;box-sizing:border-box;margin-top:1rem;padding:.65rem;border:0;border-radius:8px;background:#3b5bdb;color:#fff;font:inherit;text-align:center;text-decoration:none;cursor:pointer}
.button.secondary{background:#fff;color:#1f2430;border:1px solid #c9cedb}.muted{color:#5b6275;font-size:.9rem}
main.wide{max-width:960px}h2{font-size:1.15rem;margin:1.5rem 0 .25rem}h3{font-size:1rem;margin:.75rem 0 .25rem}
table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:top;padding:.3rem .5rem;border-bottom:1px solid #e3e6ee}
th{white-space:nowrap;font-weight:600}td code,pre{word-break:break-all;white-space:pre-wrap}pre{background:#f6f7fb;padding:.75rem;border-radius:8px;margin:0}`;

/** A minimal hosted page (no scripts: the CSP allows none inline); `wide` for tables of data. */
export function hostedPage(title: string, body: string, opts: { wide?: boolean } = {}): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>${FAVICON_LINK}<style>${STYLE}</style></head><body><main${opts.wide ? ' class="wide"' : ''}>${body}</main></body></html>`;
}

export function messagePage(title: string, detail: string, linkHref: string): string {
  return hostedPage(
    title,
    `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(detail)}</p><a class="button" href="${escapeHtml(linkHref)}">Continue</a>`,
  );
}

/**
 * /signin and /signup: an email form (the engine's password flow, with the email as login_hint)
 * and a social button. Branded with the application's name when a publishable key came along.
 */
export function signInPage(opts: {
  intent: 'signin' | 'signup';
  appName?: string;
  returnTo?: string;
  publishableKey?: string;
  socialProvider: string;
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
  const heading = opts.intent === 'signup' ? 'Create your account' : 'Sign in';
  const to = opts.appName ? ` to ${escapeHtml(opts.appName)}` : '';
  const provider = escapeHtml(opts.socialProvider.charAt(0).toUpperCase() + opts.socialProvider.slice(1));
  const other =
    opts.intent === 'signup'
      ? `<p class="muted">Already have an account? <a href="/signin${switchQuery}" data-testid="switch-intent">Sign in</a></p>`
      : `<p class="muted">New here? <a href="/signup${switchQuery}" data-testid="switch-intent">Create an account</a></p>`;
  return hostedPage(
    heading,
    `<h1 data-testid="hosted-heading">${heading}${to}</h1>
<form method="get" action="/auth/login">${hidden}
<label for="email">Email</label><input id="email" name="login_hint" type="email" autocomplete="email" required>
<button type="submit" data-testid="continue-email">Continue with email</button></form>
<a class="button secondary" data-testid="continue-social" href="/auth/login?${escapeHtml(social.toString())}">Continue with ${provider}</a>
${other}<p class="muted">Your password is entered at the identity provider, never here.</p>`,
  );
}

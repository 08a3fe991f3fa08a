import { checkAbsoluteUrl, checkAllowedOrigin, checkRedirectUrl } from '@svc/contracts/applications';
import type { Db } from '@svc/db/client';
import { type KeylessUrlList, rememberKeylessUrl } from '@svc/db/queries/applications';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { isLoopbackOrigin, isLoopbackRedirect } from './clients.ts';

/** How many URLs of each kind the keyless application keeps (the newest). */
const KEYLESS_URLS_KEPT = 10;

type Checked = { value: string } | { error: string };

/**
 * The keyless development application accepts any loopback redirect URI, post-logout URL and
 * browser origin, so an app built against it registers nothing. A claimed application is an
 * ordinary client with exact allowlists: to keep those apps signing in across the claim, the
 * keyless application remembers the URLs they actually used, and the claim keeps them as the
 * application's registered ones (docs/api.md, "Claiming a keyless development application"):
 *
 * - a redirect URI the provider sent an authorization code to (after a sign-in, not merely asked
 *   for: anyone may send an authorization request);
 * - a post_logout_redirect_uri of an end-session request it accepted;
 * - the Origin of a browser's successful token request (a single-page app's CORS origin).
 *
 * Only loopback values (the only ones the keyless client takes), only in the exact form the
 * application's own allowlists store (so the claimed client matches them byte for byte), and
 * only the newest KEYLESS_URLS_KEPT of each. A value already remembered writes nothing.
 */
export function rememberKeylessUrls(db: Db, clients: { isKeyless: (clientId: string) => boolean }) {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<unknown>) => {
    await next();
    const client = ctx.oidc?.client;
    if (!client || !clients.isKeyless(client.clientId) || ctx.status >= 400) {
      return;
    }
    const remembered = rememberedUrl(ctx);
    if (remembered) {
      await rememberKeylessUrl(db, { id: client.clientId, ...remembered, keep: KEYLESS_URLS_KEPT });
    }
  };
}

/** What one answered request of the keyless client teaches, if anything. */
function rememberedUrl(ctx: KoaContextWithOIDC): { list: KeylessUrlList; value: string } | undefined {
  const route = ctx.oidc?.route;
  const params = ctx.oidc?.params;
  if ((route === 'authorization' || route === 'resume') && codeSentTo(ctx, params?.redirect_uri)) {
    return exactly('redirectUrls', params?.redirect_uri, isLoopbackRedirect, checkRedirectUrl);
  }
  if (route === 'end_session') {
    return exactly('postLogoutRedirectUrls', params?.post_logout_redirect_uri, isLoopbackRedirect, checkAbsoluteUrl);
  }
  if (route === 'token') {
    return exactly('allowedOrigins', ctx.get('origin') || undefined, isLoopbackOrigin, checkAllowedOrigin);
  }
  return undefined;
}

/** Whether the answer redirects the browser to `redirectUri` with an authorization code. */
function codeSentTo(ctx: KoaContextWithOIDC, redirectUri: unknown): boolean {
  const location = URL.parse(String(ctx.response.get('location') ?? ''));
  return (
    typeof redirectUri === 'string' &&
    ctx.oidc.redirectUriCheckPerformed === true &&
    location !== null &&
    `${location.origin}${location.pathname}` === `${URL.parse(redirectUri)?.origin}${URL.parse(redirectUri)?.pathname}` &&
    location.searchParams.has('code')
  );
}

function exactly(
  list: KeylessUrlList,
  value: unknown,
  loopback: (value: string) => boolean,
  check: (value: string) => Checked,
): { list: KeylessUrlList; value: string } | undefined {
  if (typeof value !== 'string' || !loopback(value)) {
    return undefined;
  }
  const checked = check(value);
  return 'value' in checked && checked.value === value ? { list, value } : undefined;
}

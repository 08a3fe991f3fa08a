import { PUBLISHABLE_KEY_PATTERN } from '@svc/contracts/keys';
import { type Request, type Response, Router } from 'express';
import type { AppServices } from '../context.ts';
import { DEFAULT_RETURN_TO, sanitizeReturnTo } from '../modules/auth/return-to.ts';
import { continueLogout } from '../modules/oidc-provider/logout.ts';
import { allowFormRedirectTo } from '../modules/shared/csp.ts';
import { FAVICON_PATH, hostedPage } from '../modules/shared/hosted-page.ts';
import { sendBrandedPage } from './hosted/page.ts';
import { signInPage } from './hosted/sign-in-pages.ts';

/** The landing page: what svc is and where to go, in the hosted pages' look. */
const LANDING = hostedPage(
  'svc: identity and access control plane',
  `<div class="brand"><img class="brand__logo" src="${FAVICON_PATH}" alt="" width="48" height="48"></div>
<h1>svc</h1>
<p>Hosted identity and access control plane: hosted sign-in, tenants, roles, API keys, usage, webhooks and audit logs on top of your OIDC identity engine.</p>
<p>Start without an account: <code>GET /v1/client/config?keyless=1</code>.</p>
<nav class="actions" aria-label="Start here">
<a class="button" href="/auth/console/">Open the console</a>
<a class="button secondary" href="/signin">Sign in</a>
<a class="button secondary" href="/docs">API reference</a>
<a class="button secondary" href="/v1/openapi.json">OpenAPI document</a>
</nav>`,
  { wide: true },
);

/** Hosted pages served as plain HTML (no SPA needed for them). */
export function pagesRouter(services: AppServices): Router {
  const r = Router();
  r.get('/', (_req, res) => {
    res.type('html').send(LANDING);
  });

  const hosted = (intent: 'signin' | 'signup') => async (req: Request, res: Response) => {
    // The engine's end-session hands an application's logout back here (with its state).
    if (
      intent === 'signin' &&
      (await continueLogout(req, res, { publicUrl: services.config.publicUrl, clients: services.oidc.provider.Client }))
    ) {
      return;
    }
    const key = typeof req.query.publishable_key === 'string' ? req.query.publishable_key : undefined;
    const found = key && PUBLISHABLE_KEY_PATTERN.test(key) ? await services.applications.byPublishableKey(key) : null;
    // Sanitized here so the page never carries a hostile address onwards, and again by
    // /auth/login (against the allowlist of the application, if still active).
    const returnTo =
      typeof req.query.return_to === 'string'
        ? sanitizeReturnTo(req.query.return_to, {
            publicUrl: services.config.publicUrl,
            allowlist: found?.application.redirectUrls,
            fallback: DEFAULT_RETURN_TO,
          })
        : undefined;
    // An address off svc is one the application registered (exactly; anything else fell back to
    // a path above). The form's answer ends there when the engine still has a session (engine,
    // /auth/callback, return_to in one go), so that origin may end it.
    if (returnTo !== undefined && !returnTo.startsWith('/')) {
      allowFormRedirectTo(res, returnTo);
    }
    const application = found ? { name: found.application.name, logoUrl: found.application.logoUrl } : undefined;
    sendBrandedPage(
      res,
      application,
      signInPage({
        // Without sign-up at the engine, /signup is the sign-in page.
        intent: services.config.engine.offers.handOffs.signup ? intent : 'signin',
        application,
        returnTo,
        publishableKey: found ? key : undefined,
        socialProvider: services.config.engine.offers.handOffs.social ? services.config.engine.socialProvider : null,
        signUp: services.config.engine.offers.handOffs.signup,
      }),
    );
  };
  // README.md "Sign-in": /sign-in and /sign-up are compatibility aliases.
  r.get(['/signin', '/sign-in'], hosted('signin'));
  r.get(['/signup', '/sign-up'], hosted('signup'));
  return r;
}

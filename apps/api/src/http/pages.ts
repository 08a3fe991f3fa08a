import { PUBLISHABLE_KEY_PATTERN } from '@svc/contracts/keys';
import { type Request, type Response, Router } from 'express';
import type { AppServices } from '../context.ts';
import { signInPage } from '../modules/auth/pages.ts';
import { DEFAULT_RETURN_TO, sanitizeReturnTo } from '../modules/auth/return-to.ts';
import { continueLogout } from '../modules/oidc-provider/logout.ts';
import { FAVICON_LINK } from './favicon.ts';
import { allowFormRedirectTo } from './security-headers.ts';

const LANDING = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>svc: identity and access control plane</title>
${FAVICON_LINK}
<style>
  body { font: 16px/1.5 system-ui, sans-serif; margin: 0; color: #1f2430; background: #f6f7fb; }
  main { max-width: 720px; margin: 10vh auto; padding: 0 24px; }
  h1 { font-size: 2.2rem; margin-bottom: .25rem; }
  p.lead { color: #4a5163; font-size: 1.15rem; }
  nav a { display: inline-block; margin: 1rem 1rem 0 0; padding: .6rem 1rem; border-radius: 8px;
          background: #3b5bdb; color: #fff; text-decoration: none; }
  nav a.secondary { background: #fff; color: #3b5bdb; border: 1px solid #c5cdf5; }
  code { background: #eceff8; padding: 1px 5px; border-radius: 4px; }
</style>
</head>
<body>
<main>
  <h1>svc</h1>
  <p class="lead">Hosted identity and access control plane: hosted sign-in, tenants, roles, API keys,
  usage, webhooks and audit logs on top of your OIDC identity engine.</p>
  <p>Start without an account: <code>GET /v1/client/config?keyless=1</code>.</p>
  <nav>
    <a href="/auth/console/">Open the console</a>
    <a class="secondary" href="/signin">Sign in</a>
    <a class="secondary" href="/docs">API reference</a>
    <a class="secondary" href="/v1/openapi.json">OpenAPI document</a>
  </nav>
</main>
</body>
</html>`;

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
    res.type('html').send(
      signInPage({
        intent,
        appName: found?.application.name,
        returnTo,
        publishableKey: found ? key : undefined,
        socialProvider: services.config.engine.socialProvider,
      }),
    );
  };
  // SPEC.md 4.3: /sign-in and /sign-up are compatibility aliases.
  r.get(['/signin', '/sign-in'], hosted('signin'));
  r.get(['/signup', '/sign-up'], hosted('signup'));
  return r;
}

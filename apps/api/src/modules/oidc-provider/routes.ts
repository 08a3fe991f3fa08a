import { Router } from 'express';
import type { AppServices } from '../../context.ts';
import { DISCOVERY_PATH, INTERACTION_PATH, interactionNotEnabledPage, OIDC_PREFIX } from './provider.ts';

/**
 * svc's OpenID Provider on the HTTP server: the hosted interaction, then everything under /oidc/
 * and the discovery document handed to oidc-provider. Plain Express, before the CSRF guard: the
 * token, revocation and introspection endpoints take form posts from applications' back ends,
 * and oidc-provider checks what each endpoint needs itself. (Discovery and JWKS are answered by
 * the fast lane from memory before Express sees them; the provider answers them too.)
 */
export function oidcProviderRouter(services: AppServices): Router {
  const router = Router();
  router.get(`${INTERACTION_PATH}/:uid`, (_req, res) => {
    res.status(503).set('Retry-After', '3600').type('html').send(interactionNotEnabledPage());
  });
  router.use((req, res, next) => {
    if (req.path === DISCOVERY_PATH || req.path.startsWith(`${OIDC_PREFIX}/`)) {
      services.oidc.handle(req, res);
      return;
    }
    next();
  });
  return router;
}

import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { Router } from 'express';
import type { AppServices } from '../context.ts';
import { pageSessionOrSignIn } from '../modules/account/require-session.ts';
import { sendError } from './errors.ts';

export const CONSOLE_DIST = fileURLToPath(new URL('../../../console/dist', import.meta.url));

/**
 * Serves the console's production build under /auth/console (README.md "Sign-in").
 *
 * - `/auth/console/assets/*` is public: Vite's content-hashed JS and CSS, the same bytes for
 *   everyone and holding no user data (what a user may see comes from /trpc, which checks the
 *   session on every call). Public assets can be cached for good and never bounce through sign-in.
 *   A missing asset is a 404, never index.html.
 * - Every other path needs a session: anonymous requests get a 303 to hosted sign-in with the
 *   path asked for as return_to; signed-in ones get index.html, so deep links work in the SPA.
 *   index.html is not reachable as a static file, so it cannot slip past that check.
 */
export function consoleRouter(services: AppServices, dist = CONSOLE_DIST): Router {
  const r = Router();
  const index = path.join(dist, 'index.html');
  r.use('/assets', express.static(path.join(dist, 'assets'), { index: false, immutable: true, maxAge: '365d' }));
  r.use('/assets', (req, res) => {
    sendError(req, res, 'not_found', 'no such console asset');
  });
  r.get('/{*rest}', async (req, res) => {
    if (!(await pageSessionOrSignIn(services, req, res))) {
      return;
    }
    if (!existsSync(index)) {
      res.status(503).type('text').send('The console is not built: run `pnpm build` (pnpm start does it for you).');
      return;
    }
    // The HTML is only for signed-in browsers: keep it out of shared caches and the back-forward
    // cache, so Back after signing out asks the server (which redirects) instead of showing it.
    res.setHeader('Cache-Control', 'no-store');
    res.sendFile(index);
  });
  return r;
}

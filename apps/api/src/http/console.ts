import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Request, type Response, Router } from 'express';
import type { AppServices } from '../context.ts';
import { sendError } from './errors.ts';
import { pageSessionOrSignIn } from './hosted/require-session.ts';

export const CONSOLE_DIST = fileURLToPath(new URL('../../../console/dist', import.meta.url));

/**
 * Serves the console's production build under /auth/console (README.md "Sign-in").
 *
 * - `/auth/console/assets/*` is public: Vite's content-hashed JS and CSS, the same bytes for
 *   everyone and holding no user data (what a user may see comes from /trpc, which checks the
 *   session on every call). Public assets can be cached for good and never bounce through sign-in.
 *   A missing asset is a 404, never index.html. Each is sent compressed (Brotli, else gzip) to
 *   a browser that accepts it, from the copies the build wrote beside the assets
 *   (dist/precompressed/, docs/architecture.md section 3): the first load of the console is a
 *   quarter of its raw size and costs the server no CPU.
 * - Every other path needs a session: anonymous requests get a 303 to hosted sign-in with the
 *   path asked for as return_to; signed-in ones get index.html, so deep links work in the SPA.
 *   index.html is not reachable as a static file, so it cannot slip past that check.
 */
export function consoleRouter(services: AppServices, dist = CONSOLE_DIST): Router {
  const r = Router();
  const index = path.join(dist, 'index.html');
  r.use('/assets', (req, res) => {
    serveAsset(dist, req, res);
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

/** Hashed names never change content: a year, and no revalidation. */
const ASSET_CACHE_CONTROL = 'public, max-age=31536000, immutable';

/** Vite's asset names: one path segment, no dot files, no way up. */
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

/** The copies the build compressed, best first, and their Content-Encoding. */
const ENCODINGS = [
  { encoding: 'br', suffix: '.br' },
  { encoding: 'gzip', suffix: '.gz' },
] as const;

/**
 * One asset of dist/assets, in the best encoding the request accepts that the build wrote a copy
 * of (the raw file otherwise). Vary: Accept-Encoding keeps a shared cache from giving Brotli to a
 * client that did not ask for it.
 */
function serveAsset(dist: string, req: Request, res: Response): void {
  const name = req.path.slice(1);
  const file = path.join(dist, 'assets', name);
  if ((req.method !== 'GET' && req.method !== 'HEAD') || !ASSET_NAME.test(name) || !existsSync(file)) {
    sendError(req, res, 'not_found', 'no such console asset');
    return;
  }
  res.vary('Accept-Encoding');
  res.setHeader('Cache-Control', ASSET_CACHE_CONTROL);
  // The type of the asset, not of its compressed copy (send keeps a Content-Type already set).
  res.type(path.extname(name));
  const accepted = acceptedEncodings(req.headers['accept-encoding']);
  const copy = ENCODINGS.find((e) => accepted.has(e.encoding));
  const compressed = copy ? path.join(dist, 'precompressed', `${name}${copy.suffix}`) : undefined;
  if (copy && compressed && existsSync(compressed)) {
    res.setHeader('Content-Encoding', copy.encoding);
    res.sendFile(compressed, { cacheControl: false, dotfiles: 'deny' });
    return;
  }
  res.sendFile(file, { cacheControl: false, dotfiles: 'deny' });
}

/**
 * The codings an Accept-Encoding header allows (q above 0). Ours are picked in our order, not the
 * header's: browsers list gzip before br with the same weight, and Brotli is the smaller.
 */
function acceptedEncodings(header: string | undefined): Set<string> {
  const accepted = new Set<string>();
  for (const part of (header ?? '').split(',')) {
    const [coding = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (coding !== '' && (q === undefined || Number(q.slice(2)) > 0)) {
      accepted.add(coding.trim());
    }
  }
  return accepted;
}

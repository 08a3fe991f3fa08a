import { Router } from 'express';
import { FAVICON_PATH } from '../modules/shared/hosted-page.ts';

/** svc's icon: the brand blue, a rounded square with a keyhole. */
const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#3451d1"/><circle cx="16" cy="13" r="5" fill="#fff"/><path d="M13.5 16.5h5l1.5 9h-8z" fill="#fff"/></svg>`;

/**
 * The icon at /favicon.svg, and at /favicon.ico for clients that ask there without reading the
 * page (browsers do on every origin): no 404 on every page view.
 */
export function faviconRouter(): Router {
  const r = Router();
  for (const path of [FAVICON_PATH, '/favicon.ico']) {
    r.get(path, (_req, res) => {
      res.type('image/svg+xml').set('Cache-Control', 'public, max-age=86400').send(ICON);
    });
  }
  return r;
}

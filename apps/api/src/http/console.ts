import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { Router } from 'express';

export const CONSOLE_DIST = fileURLToPath(new URL('../../../console/dist', import.meta.url));

/**
 * Serves the console's production build under /auth/console; every other path below it gets
 * index.html so that deep links work in the SPA.
 */
export function consoleRouter(dist = CONSOLE_DIST): Router {
  const r = Router();
  const index = path.join(dist, 'index.html');
  r.use(express.static(dist, { index: false, maxAge: '1h' }));
  r.get('/{*rest}', (_req, res) => {
    if (!existsSync(index)) {
      res.status(503).type('text').send('The console is not built: run `pnpm build` (pnpm start does it for you).');
      return;
    }
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(index);
  });
  return r;
}

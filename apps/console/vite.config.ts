import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';
// By path, not by package name: Vite loads its config with Node, which leaves a package import
// to Node (no TypeScript), and bundles a relative one.
import { SVC_DEFAULT_PORT } from '../../packages/contracts/src/ports.ts';

/** The api serves the built console under this path (apps/api, `/auth/console` with SPA fallback). */
const BASE = '/auth/console/';

/** Where `pnpm svc serve` listens in development (PORT default). */
const API_ORIGIN = `http://127.0.0.1:${SVC_DEFAULT_PORT}`;

export default defineConfig({
  base: BASE,
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
  },
  server: {
    // Same-origin in development too, so the session cookie and the CSRF Origin check behave as
    // they do in production (the api serves the bundle itself there).
    proxy: {
      '/trpc': { target: API_ORIGIN, changeOrigin: false },
      '/v1': { target: API_ORIGIN, changeOrigin: false },
      '/docs': { target: API_ORIGIN, changeOrigin: false },
    },
  },
});

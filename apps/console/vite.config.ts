import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin, type UserConfig } from 'vite';
// By path, not by package name: Vite loads its config with Node, which leaves a package import
// to Node (no TypeScript), and bundles a relative one.
import { SVC_DEFAULT_PORT } from '../../packages/contracts/src/ports.ts';

/** The api serves the built console under this path (apps/api, `/auth/console` with SPA fallback). */
const BASE = '/auth/console/';

/** Where `pnpm svc serve` listens in development (PORT default). */
const API_ORIGIN = `http://127.0.0.1:${SVC_DEFAULT_PORT}`;

/**
 * Beside the build's assets, a Brotli and a gzip copy of each, compressed once at the highest
 * level, in dist/precompressed/ (the api sends them to browsers that accept them; assets/ stays
 * exactly what Vite wrote).
 */
function precompress(): Plugin {
  let outDir = 'dist';
  return {
    name: 'svc-precompress',
    apply: 'build',
    configResolved(resolved) {
      outDir = path.resolve(resolved.root, resolved.build.outDir);
    },
    async closeBundle() {
      const assets = path.join(outDir, 'assets');
      const target = path.join(outDir, 'precompressed');
      await mkdir(target, { recursive: true });
      const names = (await readdir(assets)).filter((name) => /\.(js|css|svg|json|map)$/.test(name));
      await Promise.all(
        names.map(async (name) => {
          const bytes = await readFile(path.join(assets, name));
          const [br, gz] = await Promise.all([
            promisify(brotliCompress)(bytes, {
              params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length },
            }),
            promisify(gzip)(bytes, { level: constants.Z_BEST_COMPRESSION }),
          ]);
          await Promise.all([writeFile(path.join(target, `${name}.br`), br), writeFile(path.join(target, `${name}.gz`), gz)]);
        }),
      );
    },
  };
}

const config: UserConfig = {
  base: BASE,
  plugins: [react(), precompress()],
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
};

export default defineConfig(({ command }) => {
  if (command === 'build') {
    // A build is always for production, whatever NODE_ENV the shell has: Vite and the React
    // plugin take NODE_ENV from the environment (read after this config), and
    // `NODE_ENV=development pnpm build` would otherwise bundle React's development runtime and
    // JSX transform (larger and slower). Only `vite` (the dev server) runs in development.
    process.env.NODE_ENV = 'production';
  }
  return config;
});

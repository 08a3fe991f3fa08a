import { createRequire } from 'node:module';
import path from 'node:path';
import express, { Router } from 'express';
import { FAVICON_LINK } from '../modules/shared/hosted-page.ts';

const require = createRequire(import.meta.url);

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>svc API reference</title>
${FAVICON_LINK}
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>`;

const INIT = `window.ui = SwaggerUIBundle({ url: '/v1/openapi.json', dom_id: '#swagger-ui', deepLinking: true });`;

/** /docs: Swagger UI served from the installed swagger-ui-dist package, so it works offline. */
export function docsRouter(): Router {
  const assets = path.dirname(require.resolve('swagger-ui-dist/package.json'));
  const r = Router();
  r.get('/', (_req, res) => {
    res.type('html').send(PAGE);
  });
  r.get('/init.js', (_req, res) => {
    res.type('application/javascript').send(INIT);
  });
  r.use('/assets', express.static(assets, { index: false, maxAge: '1h' }));
  return r;
}

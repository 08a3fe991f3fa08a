/**
 * The baseline of the client-credentials figure (bench/client-credentials.ts): bare oidc-provider,
 * nothing of svc's, on its in-memory adapter and a plain node:http server. One machine client
 * (client_secret_basic), one API resource whose JWT access tokens it may get, the same signing
 * algorithm as svc (OIDC_SIGNING_ALG, RS256 by default). Settings: PORT, HOST, PUBLIC_URL (the
 * issuer), BENCH_CC_CLIENT_ID, BENCH_CC_CLIENT_SECRET, BENCH_CC_RESOURCE, BENCH_CC_SCOPE.
 */
import http from 'node:http';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

const alg = process.env.OIDC_SIGNING_ALG === 'ES256' ? 'ES256' : 'RS256';
const { privateKey } = await generateKeyPair(alg, { extractable: true });
const jwk = { ...(await exportJWK(privateKey)), alg, use: 'sig', kid: 'bench' };
const resource = process.env.BENCH_CC_RESOURCE as string;
const scope = process.env.BENCH_CC_SCOPE ?? '';

const provider = new Provider(process.env.PUBLIC_URL as string, {
  jwks: { keys: [jwk] },
  clients: [
    {
      client_id: process.env.BENCH_CC_CLIENT_ID as string,
      client_secret: process.env.BENCH_CC_CLIENT_SECRET as string,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  clientDefaults: { id_token_signed_response_alg: alg },
  // svc's token endpoint path, so both sides are loaded alike.
  routes: { token: '/oidc/token' },
  ttl: { ClientCredentials: 600 },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      getResourceServerInfo: async () => ({ audience: resource, accessTokenFormat: 'jwt', accessTokenTTL: 600, scope }),
    },
  },
});
provider.proxy = true;
const callback = provider.callback();
const server = http.createServer((req, res) => {
  if (req.url === '/healthz') {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    return;
  }
  callback(req, res);
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}

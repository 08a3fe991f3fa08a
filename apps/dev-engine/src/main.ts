import { startDevEngine } from './engine.ts';
import { devEngineUsersFile, parseDevEngineEnv } from './env.ts';
import { loadDevUsers } from './users.ts';

const env = parseDevEngineEnv(process.env);
const users = loadDevUsers(process.env);
const origins = [...new Set(env.DEV_ENGINE_REDIRECT_URIS.map((u) => new URL(u).origin))];

const engine = await startDevEngine({
  port: env.DEV_ENGINE_PORT,
  host: env.DEV_ENGINE_HOST,
  slug: env.DEV_ENGINE_SLUG,
  users,
  usersFile: devEngineUsersFile(env.DATA_DIR),
  ...(env.DEV_ENGINE_ADMIN_TOKEN ? { adminToken: env.DEV_ENGINE_ADMIN_TOKEN } : {}),
  clients: [
    {
      client_id: env.DEV_ENGINE_CLIENT_ID,
      ...(env.DEV_ENGINE_CLIENT_SECRET ? { client_secret: env.DEV_ENGINE_CLIENT_SECRET } : {}),
      redirect_uris: env.DEV_ENGINE_REDIRECT_URIS,
      post_logout_redirect_uris: env.DEV_ENGINE_POST_LOGOUT_REDIRECT_URIS ?? origins.flatMap((o) => [`${o}/`, `${o}/signin`]),
    },
  ],
});

const lines = [
  'svc dev engine (Authentik-shaped OIDC)',
  `  issuer:      ${engine.issuer}`,
  `  discovery:   ${engine.issuer}.well-known/openid-configuration`,
  `  client_id:   ${env.DEV_ENGINE_CLIENT_ID}${env.DEV_ENGINE_CLIENT_SECRET ? ' (confidential)' : ' (public, PKCE)'}`,
  `  admin API:   ${engine.url}/api/v3/ (Authorization: Bearer ${engine.adminToken})`,
  '  users:',
  ...users.map((u) => `    ${u.email} / ${u.password}${u.groups.length ? ` (groups: ${u.groups.join(', ')})` : ''}`),
  '    social@svc.local via /source/oauth/login/google/',
  `  sign-ups:    kept in ${engine.users.file} (password hashes only; delete it to forget them)`,
];
console.log(lines.join('\n'));

const stop = () => {
  engine.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);

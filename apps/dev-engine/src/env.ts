import path from 'node:path';
import { DEV_ENGINE_DEFAULT_PORT, SVC_DEFAULT_PORT } from '@svc/contracts/ports';
import { z } from 'zod';

const ZCsv = z
  .string()
  .transform((v) =>
    v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.url()).min(1));

/** Settings of the standalone engine (`pnpm dev-engine`). DEV_ENGINE_USERS is read by loadDevUsers. */
export const ZDevEngineEnv = z.object({
  /** Port to listen on; default 7151 (DEV_ENGINE_DEFAULT_PORT). */
  DEV_ENGINE_PORT: z.coerce.number().int().min(0).max(65_535).default(DEV_ENGINE_DEFAULT_PORT),
  /** Interface to bind and host of the issuer; default 127.0.0.1 (loopback only). */
  DEV_ENGINE_HOST: z.string().min(1).default('127.0.0.1'),
  /** Bearer token for `/api/v3/`; default a random token printed at start. */
  DEV_ENGINE_ADMIN_TOKEN: z.string().min(1).optional(),
  /** Application slug in `/application/o/<slug>/`; default `svc`. */
  DEV_ENGINE_SLUG: z
    .string()
    .regex(/^[a-z0-9-]+$/)
    .default('svc'),
  DEV_ENGINE_CLIENT_ID: z.string().min(1).default('svc'),
  /** Unset: a public client (PKCE only). Set: a confidential client (client_secret_basic). */
  DEV_ENGINE_CLIENT_SECRET: z.string().min(1).optional(),
  /** Default: svc's callback on its default port, by IP and by name. */
  DEV_ENGINE_REDIRECT_URIS: ZCsv.default(['127.0.0.1', 'localhost'].map((host) => `http://${host}:${SVC_DEFAULT_PORT}/auth/callback`)),
  /** Default: `/` and `/signin` on each redirect URI's origin. */
  DEV_ENGINE_POST_LOGOUT_REDIRECT_URIS: ZCsv.optional(),
  /** svc's DATA_DIR (default `.data`): sign-ups are kept in `<DATA_DIR>/dev-engine/users.json`. */
  DATA_DIR: z.string().min(1).default('.data'),
});

export type TDevEngineEnv = z.infer<typeof ZDevEngineEnv>;

/** Where the development engine keeps the users added while it runs, under svc's DATA_DIR. */
export function devEngineUsersFile(dataDir: string): string {
  return path.resolve(dataDir, 'dev-engine', 'users.json');
}

export function parseDevEngineEnv(env: Record<string, string | undefined>): TDevEngineEnv {
  const parsed = ZDevEngineEnv.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`invalid ${issue?.path.join('.') ?? 'environment'}: ${issue?.message ?? 'unknown error'}`);
  }
  return parsed.data;
}

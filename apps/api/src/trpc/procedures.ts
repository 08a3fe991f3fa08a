import { resolvePublishableKeyFromRequest, resolveSecretKey } from '../modules/applications/resolve.ts';
import { publicProcedure } from './init.ts';

/** Procedures authenticated by a publishable key (or keyless=1). */
export const publishableKeyProcedure = publicProcedure.meta({ auth: 'publishableKey' }).use(async ({ ctx, getRawInput, next }) => {
  const raw = ((await getRawInput()) ?? {}) as { publishable_key?: unknown; keyless?: unknown };
  const resolved = await resolvePublishableKeyFromRequest(ctx.services, ctx.req.headers, raw);
  return next({ ctx: { ...ctx, resolved } });
});

/** Procedures authenticated by an application secret key. */
export const secretKeyProcedure = publicProcedure.meta({ auth: 'secretKey' }).use(async ({ ctx, next }) => {
  const found = await resolveSecretKey(ctx.services, ctx.req.headers.authorization);
  return next({ ctx: { ...ctx, application: found } });
});

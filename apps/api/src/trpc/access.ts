import { type AccessInput, accessOf } from '../modules/access/access-rule.ts';
import type { Principal } from '../modules/access/authorize.ts';
import { middleware } from './init.ts';

/**
 * The one middleware that applies `Meta.access`: placed after the route's `.input(...)`, on a
 * control-plane procedure (trpc/procedures.ts gives `ctx.principal`). `test/access-declared.test.ts`
 * fails on a control procedure whose meta and middleware disagree.
 */
export const resolveAccess = middleware(async ({ ctx, meta, input, next }) => {
  const rule = meta?.access;
  const principal = (ctx as { principal?: Principal }).principal;
  if (!rule || !principal) {
    throw new Error('resolveAccess needs a control-plane procedure whose meta declares access');
  }
  const access = await accessOf(ctx.services.db, principal, rule, input as AccessInput);
  return next({ ctx: { access } });
});

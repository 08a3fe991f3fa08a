import { type AccessInput, type ApplicationCaller, accessOf, type OwnRuleCaller } from '../modules/access/access-rule.ts';
import type { Access, Principal } from '../modules/access/authorize.ts';
import { middleware } from './init.ts';

/**
 * The one middleware that applies `Meta.access`: placed after the route's `.input(...)`, on a
 * control-plane procedure (trpc/procedures.ts gives `ctx.principal`). `test/access-declared.test.ts`
 * fails on a control procedure whose meta and middleware disagree.
 */
export const resolveAccess = middleware(async ({ ctx, meta, input, next }) => {
  const rule = meta?.access;
  const principal = (ctx as { principal?: Principal }).principal;
  if (!rule || rule.ownRuleFor || !principal) {
    throw new Error('resolveAccess needs a control-plane procedure whose meta declares access (ownRuleFor: resolveAccessOrOwnRule)');
  }
  const access = await accessOf(ctx.services.db, principal, rule, input as AccessInput);
  return next({ ctx: { access } });
});

/**
 * `resolveAccess` for a procedure whose meta names a kind of caller it judges itself
 * (`AccessRule.ownRuleFor`): that caller gets `ctx.access` null and the procedure's own rule
 * (`accessOr`); every other caller, the declared rule, exactly as `resolveAccess` applies it.
 * The caller is `ctx.caller` (a procedure that also admits application secret keys) or
 * `ctx.principal`.
 */
export const resolveAccessOrOwnRule = middleware(async ({ ctx, meta, input, next }) => {
  const rule = meta?.access;
  const caller = (ctx as { caller?: Principal | ApplicationCaller }).caller ?? (ctx as { principal?: Principal }).principal;
  if (!rule?.ownRuleFor || !caller) {
    throw new Error('resolveAccessOrOwnRule needs a procedure whose meta declares access with ownRuleFor');
  }
  let access: Access | null = null;
  if (caller.kind !== rule.ownRuleFor) {
    if (caller.kind === 'application') {
      throw new Error('an application secret key reached a rule that does not admit one');
    }
    access = await accessOf(ctx.services.db, caller, rule, input as AccessInput);
  }
  return next({ ctx: { access } });
});

/**
 * What a handler behind `resolveAccessOrOwnRule` hands its service: the resolved access, or the
 * caller of the kind its rule leaves to the procedure (`kind`, the meta's `ownRuleFor`).
 */
export function accessOr<C extends { kind: string }, K extends OwnRuleCaller & C['kind']>(
  access: Access | null,
  caller: C,
  kind: K,
): Access | Extract<C, { kind: K }> {
  if (access) {
    return access;
  }
  if (caller.kind !== kind) {
    throw new Error(`resolveAccessOrOwnRule resolved no access for a ${caller.kind} caller`);
  }
  return caller as Extract<C, { kind: K }>;
}

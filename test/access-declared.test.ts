import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveAccess, resolveAccessOrOwnRule } from '../apps/api/src/trpc/access.ts';
import type { Meta } from '../apps/api/src/trpc/init.ts';
import { appRouter } from '../apps/api/src/trpc/router.ts';

/**
 * Access is declared on the procedure (docs/architecture.md section 3): a control-plane procedure
 * names its permission and how its organization is found in `meta.access`, and `resolveAccess`
 * applies it after the input. These checks keep the two together and services free of the rule.
 */

type Def = { meta?: Meta; middlewares: Array<{ _type?: string }> };

const middlewareOf = (m: unknown) => (m as { _middlewares: unknown[] })._middlewares[0];
const RESOLVE = middlewareOf(resolveAccess);
const RESOLVE_OR_OWN_RULE = middlewareOf(resolveAccessOrOwnRule);

const procedures = Object.entries(appRouter._def.procedures as unknown as Record<string, { _def: Def }>).map(([name, p]) => ({
  name,
  def: p._def,
}));

/**
 * Control-plane procedures with no organization to resolve, and why. Anything else on the
 * control ladder declares `access`.
 */
const NO_ORGANIZATION: Record<string, string> = {
  'me.switchWorkspace': "moves the caller's own session among the caller's own organizations (me tests)",
  'me.acceptMembership': "answers the caller's own pending membership: the caller is the subject, not a permission",
  'me.declineMembership': "answers the caller's own pending membership: the caller is the subject, not a permission",
  'tenants.create': 'creates an organization: the caller becomes its admin',
  'tenants.permission.list': 'the same permission catalog for any signed-in caller or API key',
  'invitations.accept': 'authorized by the invitation token, not a membership',
  'webhooks.eventTypes': 'the same event catalog for any signed-in caller or API key',
  'subscriptions.plan.list': 'the same plan list for any signed-in caller or API key',
};

const ROOT = path.resolve(import.meta.dirname, '..');
const SRC = path.join(ROOT, 'apps/api/src');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) {
      return sources(file);
    }
    return name.endsWith('.ts') && !/\.(test|matrix|fixtures)\.ts$/.test(name) ? [file] : [];
  });
}

describe('access declared on the procedure', () => {
  it('every procedure that declares access resolves it after its input, and only those do', () => {
    const wrong: string[] = [];
    for (const { name, def } of procedures) {
      // A rule that leaves a kind of caller to the procedure (ownRuleFor) has its own middleware.
      const expected = def.meta?.access?.ownRuleFor ? RESOLVE_OR_OWN_RULE : RESOLVE;
      const other = expected === RESOLVE ? RESOLVE_OR_OWN_RULE : RESOLVE;
      const at = def.middlewares.indexOf(expected as never);
      const lastInput = def.middlewares.map((m) => m._type).lastIndexOf('input');
      if (def.meta?.access && (at === -1 || at < lastInput)) {
        wrong.push(
          `${name}: declares access but does not .use(${expected === RESOLVE ? 'resolveAccess' : 'resolveAccessOrOwnRule'}) after its .input()`,
        );
      }
      if (def.middlewares.includes(other as never)) {
        wrong.push(`${name}: uses the access middleware of ${def.meta?.access?.ownRuleFor ? 'a rule without' : 'a rule with'} ownRuleFor`);
      }
      if (!def.meta?.access && at !== -1) {
        wrong.push(`${name}: uses resolveAccess without declaring access in its meta`);
      }
      if (def.meta?.access && !def.meta.control) {
        wrong.push(`${name}: declares access on a procedure outside the control-plane ladder`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('every control-plane procedure declares its access, or says why it has no organization', () => {
    const undeclared = procedures
      .filter(({ name, def }) => def.meta?.control && !def.meta.access && !def.meta.platformOnly && NO_ORGANIZATION[name] === undefined)
      .map(({ name }) => name);
    expect(undeclared).toEqual([]);
  });

  it('nothing outside modules/access calls authorize: routes declare their access, resolved for them', () => {
    const files = sources(SRC);
    // The scan reads the sources at all (a broken walk would pass vacuously).
    expect(files.length).toBeGreaterThan(200);
    const calling = files
      .filter((file) => !file.startsWith(path.join(SRC, 'modules/access/')))
      .filter((file) => /\bauthorize(Record)?\(/.test(readFileSync(file, 'utf8')))
      .map((file) => path.relative(ROOT, file));
    expect(calling).toEqual([]);
  });
});

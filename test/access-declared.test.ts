import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveAccess } from '../apps/api/src/trpc/access.ts';
import type { Meta } from '../apps/api/src/trpc/init.ts';
import { appRouter } from '../apps/api/src/trpc/router.ts';

/**
 * Access is declared on the procedure (docs/architecture.md section 3): a control-plane procedure
 * names its permission and how its organization is found in `meta.access`, and `resolveAccess`
 * applies it after the input. These checks keep the two together and services free of the rule.
 */

type Def = { meta?: Meta; middlewares: Array<{ _type?: string }> };

const RESOLVE = (resolveAccess as unknown as { _middlewares: unknown[] })._middlewares[0];

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
  'tenants.list': "lists the caller's own organizations (an API key: its own, with tenant.read, checked in the service)",
  'tenants.create': 'creates an organization: the caller becomes its admin',
  'tenants.permission.list': 'the same permission catalog for any signed-in caller or API key',
  'invitations.accept': 'authorized by the invitation token, not a membership',
  'webhooks.eventTypes': 'the same event catalog for any signed-in caller or API key',
  'subscriptions.plan.list': 'the same plan list for any signed-in caller or API key',
  'permissions.check':
    'its callers include application secret keys, which no organization role describes: the check has its own rule (modules/permission-check/service.ts)',
};

const ROOT = path.resolve(import.meta.dirname, '..');
const MODULES = path.join(ROOT, 'apps/api/src/modules');

/**
 * Module files that still call `authorize` themselves, and why the route's meta cannot say it.
 * The list may only shrink.
 */
const CALLS_AUTHORIZE: Record<string, string> = {
  'apps/api/src/modules/applications/claim.ts':
    "the hosted claim page, not a procedure: it authorizes inside the claim's transaction, after the keyless application is locked and the link's own refusals",
  'apps/api/src/modules/permission-check/service.ts':
    'the permission check: a question about an organization asked by an application, an API key or a person',
  'apps/api/src/modules/tenants/service.ts':
    'GET /v1/tenants: only an API key is authorized (tenant.read in its own organization); a person lists their own memberships',
  'apps/api/src/modules/usage/ingest.ts':
    'usage ingestion: the writer may be an application secret key, which is not a control-plane principal',
};

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
      const at = def.middlewares.indexOf(RESOLVE as never);
      const lastInput = def.middlewares.map((m) => m._type).lastIndexOf('input');
      if (def.meta?.access && (at === -1 || at < lastInput)) {
        wrong.push(`${name}: declares access but does not .use(resolveAccess) after its .input()`);
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

  it('services receive the resolved access instead of calling authorize', () => {
    const calling = sources(MODULES)
      .filter((file) => !file.startsWith(path.join(MODULES, 'access')))
      .filter((file) => /\bauthorize(Record)?\(/.test(readFileSync(file, 'utf8')))
      .map((file) => path.relative(ROOT, file));
    expect(calling.filter((file) => CALLS_AUTHORIZE[file] === undefined)).toEqual([]);
    expect(
      Object.keys(CALLS_AUTHORIZE).filter((file) => !calling.includes(file)),
      'listed but no longer calling',
    ).toEqual([]);
  });
});

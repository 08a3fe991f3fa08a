import { newId } from '@svc/contracts/ids';
import { PERMISSIONS, type Permission, SYSTEM_ROLES } from '@svc/contracts/permissions';
import type { OrganizationRow } from '@svc/db/queries/organizations';
import { roles } from '@svc/db/schema/roles';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../apps/api/src/http/openapi.ts';
import { revokeSession } from '../../apps/api/src/modules/session-store/service.ts';
import type { RunningServer } from '../../apps/api/src/server.ts';
import { type SignedIn, seedApiKey, seedOrganization, seedSignedIn } from './tenancy.ts';

/**
 * The shared authorization matrix (issue "Authorization matrix"; unkey's runCommonRouteTests):
 * every control-plane route is run as each kind of caller and must answer
 *
 *   anonymous                          401
 *   revoked session / revoked API key  401
 *   user of another organization       404 (for any id of this one: existence is not disclosed)
 *   member lacking the permission      403
 *   org_member on a mutation           403
 *   API key outside its scopes         403 (or 403 for routes API keys may not call at all)
 *   org admin, platform admin, API key with the scope: allowed
 *
 * A domain declares its routes in `<domain>.matrix.ts` (a `MATRIX: MatrixRoute[]` export) and
 * runs `describeAuthMatrix` over them; test/auth-matrix-coverage.test.ts fails when a
 * control-plane operation of the OpenAPI document has no entry anywhere.
 */
export type MatrixFixture = {
  /** The organization every route acts on. */
  org: OrganizationRow;
  /** Its org admin (the caller of `prepare`). */
  admin: SignedIn;
  server: RunningServer;
};

export type MatrixRoute = {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** The OpenAPI path template, e.g. `/v1/tenants/{id}/api-keys` (coverage matches on it). */
  template: string;
  /**
   * The permission the route checks: read from its procedure's `access` meta (the OpenAPI
   * document's `x-svc-permission`); given here only for a route whose meta does not declare it.
   */
  permission?: Permission;
  /** Changes state: org_member gets 403 (docs/api.md "Tenants, members and permissions"). */
  mutation: boolean;
  /** Tenant API keys may call it (with the permission in scope). */
  apiKey: boolean;
  /**
   * Builds the concrete request for one caller: the path (ids of `fixture.org`'s resources,
   * created here when the route consumes them, e.g. a revoke) and the JSON body.
   */
  prepare: (fixture: MatrixFixture) => Promise<{ path: string; body?: unknown }>;
  /** Status an allowed caller gets (default: any 2xx). */
  okStatus?: number;
};

/** A row with the permission its route declares. */
type ResolvedRoute = MatrixRoute & { permission: Permission };

type Caller = { name: string; headers: () => Record<string, string>; expect: (route: ResolvedRoute) => number | 'ok' };

async function send(server: RunningServer, route: MatrixRoute, req: { path: string; body?: unknown }, headers: Record<string, string>) {
  const hasBody = route.method !== 'GET' && route.method !== 'DELETE';
  const res = await fetch(`${server.url}${req.path}`, {
    method: route.method,
    headers: {
      // docs/api.md ("Tenants, members and permissions"): every cookie-authenticated mutation, DELETE included, is sent as JSON.
      ...(route.method !== 'GET' ? { 'content-type': 'application/json' } : {}),
      origin: server.services.config.publicUrl.replace(/\/$/, ''),
      ...headers,
    },
    body: hasBody ? JSON.stringify(req.body ?? {}) : undefined,
  });
  const text = await res.text();
  return { status: res.status, text };
}

type Operations = Record<string, Record<string, { 'x-svc-permission'?: Permission | Permission[] }>>;
let declared: Operations | undefined;

/**
 * The route's permission as its procedure declares it (`x-svc-permission`), so a matrix row
 * cannot drift from the route: a row that names another one, or neither, fails here. A route
 * whose input picks its permission declares a list: the row names the one its request needs.
 */
function declaredPermission(route: MatrixRoute): Permission {
  declared ??= (buildOpenApiDocument('http://svc.test') as { paths: Operations }).paths;
  const listed = declared[route.template.replace(/^\/v1/, '')]?.[route.method.toLowerCase()]?.['x-svc-permission'];
  if (Array.isArray(listed)) {
    if (!route.permission || !listed.includes(route.permission)) {
      throw new Error(`${route.method} ${route.template}: the row must name the permission its request needs, one of ${listed.join(', ')}`);
    }
    return route.permission;
  }
  const fromMeta = listed;
  if (fromMeta && route.permission && fromMeta !== route.permission) {
    throw new Error(`${route.method} ${route.template}: the matrix says ${route.permission}, the route declares ${fromMeta}`);
  }
  const permission = fromMeta ?? route.permission;
  if (!permission) {
    throw new Error(`${route.method} ${route.template}: the route declares no permission (meta.access)`);
  }
  return permission;
}

/** Runs every route of `routes` as every kind of caller. `getServer` is read when tests run. */
export function describeAuthMatrix(name: string, getServer: () => RunningServer, given: MatrixRoute[]): void {
  const routes = given.map((route): ResolvedRoute => ({ ...route, permission: declaredPermission(route) }));
  describe(`authorization matrix: ${name}`, () => {
    let fixture: MatrixFixture;
    let callers: Caller[];
    let ready: Promise<void> | undefined;

    async function setUp(): Promise<void> {
      const server = getServer();
      const db = server.services.db;
      const org = await seedOrganization(db);
      const other = await seedOrganization(db);
      // The matrix is about who may call; seat limits have their own walk
      // (modules/subscriptions/subscription-gate.test.ts). Member-adding prepares would otherwise
      // fill the default plan's 10 seats and turn later answers into 402.
      await server.services.sql`update subscriptions set seats = 1000000 where tenant_id = ${org.id}`;
      const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
      fixture = { org, admin, server };
      const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
      // A custom role with nothing: lacks every permission.
      await db.insert(roles).values({ id: newId('role'), tenantId: org.id, key: 'nothing', name: 'Nothing', permissions: [] });
      const powerless = await seedSignedIn(db, { organization: org, roleKey: 'nothing' });
      const outsider = await seedSignedIn(db, { organization: other, roleKey: 'org_admin' });
      const platform = await seedSignedIn(db, { platformAdmin: true });
      const revokedUser = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
      await revokeSession(db, revokedUser.sessionId);
      const keys = new Map<Permission, { all: string; without: string }>();
      for (const permission of new Set(routes.map((r) => r.permission))) {
        const all = await seedApiKey(db, { tenantId: org.id, scopes: [...PERMISSIONS] });
        const without = await seedApiKey(db, { tenantId: org.id, scopes: PERMISSIONS.filter((p) => p !== permission) });
        keys.set(permission, { all: all.authorization, without: without.authorization });
      }
      const revokedKey = await seedApiKey(db, { tenantId: org.id, scopes: [...PERMISSIONS], revoked: true });
      const otherKey = await seedApiKey(db, { tenantId: other.id, scopes: [...PERMISSIONS] });
      const cookie = (s: SignedIn) => () => ({ cookie: s.cookie });
      callers = [
        { name: 'anonymous', headers: () => ({}), expect: () => 401 },
        { name: 'revoked session', headers: cookie(revokedUser), expect: () => 401 },
        { name: 'revoked API key', headers: () => ({ authorization: revokedKey.authorization }), expect: () => 401 },
        { name: 'user of another organization', headers: cookie(outsider), expect: () => 404 },
        {
          name: 'API key of another organization',
          headers: () => ({ authorization: otherKey.authorization }),
          expect: (r) => (r.apiKey ? 404 : 403),
        },
        { name: 'member lacking the permission', headers: cookie(powerless), expect: () => 403 },
        {
          name: 'org_member',
          headers: cookie(member),
          expect: (r) => (r.mutation || !SYSTEM_MEMBER.has(r.permission) ? 403 : 'ok'),
        },
        {
          name: 'API key without the scope',
          headers: () => ({ authorization: keys.get(currentPermission)?.without ?? '' }),
          expect: () => 403,
        },
        {
          name: 'API key with the scope',
          headers: () => ({ authorization: keys.get(currentPermission)?.all ?? '' }),
          expect: (r) => (r.apiKey ? 'ok' : 403),
        },
        { name: 'org admin', headers: cookie(admin), expect: () => 'ok' },
        { name: 'platform admin', headers: cookie(platform), expect: () => 'ok' },
      ];
    }

    let currentPermission: Permission = 'tenant.read';
    const callerNames = [
      'anonymous',
      'revoked session',
      'revoked API key',
      'user of another organization',
      'API key of another organization',
      'member lacking the permission',
      'org_member',
      'API key without the scope',
      'API key with the scope',
      'org admin',
      'platform admin',
    ];

    for (const route of routes) {
      it.each(callerNames)(`${route.method} ${route.template} as %s`, async (callerName) => {
        ready ??= setUp();
        await ready;
        currentPermission = route.permission;
        const caller = callers.find((c) => c.name === callerName) as Caller;
        const req = await route.prepare(fixture);
        const { status, text } = await send(fixture.server, route, req, caller.headers());
        const expected = caller.expect(route);
        if (expected === 'ok') {
          if (route.okStatus !== undefined) {
            expect(status, text).toBe(route.okStatus);
          } else {
            expect(status >= 200 && status < 300, `${status} ${text}`).toBe(true);
          }
        } else {
          expect(status, text).toBe(expected);
          // Refusals never echo anything of the organization to an outsider.
          if (expected === 404) {
            expect(text).not.toContain(fixture.org.name);
          }
        }
      });
    }
  });
}

/** What org_member holds (docs/api.md): reads of these pass for a member. */
const SYSTEM_MEMBER = new Set<Permission>(SYSTEM_ROLES.org_member.permissions);

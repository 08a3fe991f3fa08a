import { createHash } from 'node:crypto';
import { newId } from '@svc/contracts/ids';
import { PERMISSIONS } from '@svc/contracts/permissions';
import { apiKeys } from '@svc/db/schema/api-keys';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { memberships, users } from '@svc/db/schema/identity';
import { roles } from '@svc/db/schema/roles';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { MATRIX } from './api-keys.matrix.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

type Json = Record<string, any>;

async function call(
  method: string,
  path: string,
  opts: { cookie?: string; bearer?: string; body?: unknown } = {},
): Promise<{ status: number; json: Json; text: string }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(opts.bearer ? { authorization: `Bearer ${opts.bearer}` } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Json) : {}, text };
}

const SECRET = /^sk_live_[0-9A-Za-z]{40}$/;
const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');

async function adminOf() {
  const db = server.services.db;
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  return { db, org, admin };
}

async function createKey(cookie: string, orgId: string, body: Json) {
  return call('POST', `/v1/tenants/${orgId}/api-keys`, { cookie, body });
}

async function auditOf(targetId: string, action: string) {
  return server.services.db
    .select()
    .from(auditLogs)
    .where(and(eq(auditLogs.targetId, targetId), eq(auditLogs.action, action)));
}

describeAuthMatrix('api keys', () => server, MATRIX);

describe('POST /v1/tenants/{id}/api-keys', () => {
  it('answers 201 with the key and its raw secret once; only the hash is stored; one audit entry without the secret', async () => {
    const { db, org, admin } = await adminOf();
    const expiresAt = new Date(Date.now() + 30 * 86_400_000).toISOString();
    const res = await createKey(admin.cookie, org.id, {
      name: 'CI deploy',
      scopes: ['users.read', 'tenant.read', 'users.read'],
      expiresAt,
    });
    expect(res.status, res.text).toBe(201);
    const { apiKey, secretKey } = res.json;
    expect(Object.keys(res.json).sort()).toEqual(['apiKey', 'secretKey']);
    expect(secretKey).toMatch(SECRET);
    expect(apiKey).toEqual({
      id: expect.stringMatching(/^key_[0-9A-Za-z]{20}$/),
      name: 'CI deploy',
      scopes: ['tenant.read', 'users.read'],
      secretPrefix: secretKey.slice(0, 12),
      status: 'active',
      createdAt: expect.any(String),
      expiresAt,
      revokedAt: null,
      lastUsedAt: null,
      rotatedAt: null,
      createdBy: admin.user.id,
    });

    const [row] = await db.select().from(apiKeys).where(eq(apiKeys.id, apiKey.id));
    expect(row?.secretHash).toBe(sha256(secretKey));
    expect(JSON.stringify(row)).not.toContain(secretKey);

    const entries = await auditOf(apiKey.id, 'api_key.created');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ tenantId: org.id, actorType: 'user', actorId: admin.user.id, targetType: 'api_key' });
    expect(entries[0]?.summary).toMatchObject({ name: 'CI deploy', scopes: ['tenant.read', 'users.read'] });
    expect(JSON.stringify(entries[0])).not.toContain(secretKey);
    expect(JSON.stringify(entries[0])).not.toContain(sha256(secretKey));

    // The secret works at once, as a bearer, within its organization.
    const read = await call('GET', `/v1/tenants/${org.id}`, { bearer: secretKey });
    expect(read.status, read.text).toBe(200);
    expect(read.json.id).toBe(org.id);
  });

  it('refuses bad input with 400: unknown or no scopes, bad names, past or malformed expiry, wrong id prefix', async () => {
    const { org, admin } = await adminOf();
    const bodies: Json[] = [
      { name: 'k', scopes: ['tenant.read', 'tenant.own'] },
      { name: 'k', scopes: ['*'] },
      { name: 'k', scopes: [] },
      { name: 'k' },
      { name: 'k', scopes: 'tenant.read' },
      { scopes: ['tenant.read'] },
      { name: '', scopes: ['tenant.read'] },
      { name: 'x'.repeat(101), scopes: ['tenant.read'] },
      { name: 'a\u0000b', scopes: ['tenant.read'] },
      { name: 'k', scopes: ['tenant.read'], expiresAt: new Date(Date.now() - 1000).toISOString() },
      { name: 'k', scopes: ['tenant.read'], expiresAt: 'tomorrow' },
      { name: 'k', scopes: ['tenant.read'], expiresAt: 1_900_000_000_000 },
    ];
    for (const body of bodies) {
      const res = await createKey(admin.cookie, org.id, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error.code).toBe('validation_failed');
    }
    const wrongPrefix = await createKey(admin.cookie, 'usr_00000000000000000000', { name: 'k', scopes: ['tenant.read'] });
    expect(wrongPrefix.status).toBe(400);
    const unknown = await createKey(admin.cookie, 'ten_00000000000000000000', { name: 'k', scopes: ['tenant.read'] });
    expect(unknown.status).toBe(404);
    // Nothing was created by any of them.
    const list = await call('GET', `/v1/tenants/${org.id}/api-keys`, { cookie: admin.cookie });
    expect(list.json.data).toEqual([]);
  });

  it('a caller cannot grant scopes it does not hold (custom role with api_keys.manage): 403, nothing created', async () => {
    const { db, org } = await adminOf();
    await db.insert(roles).values({
      id: newId('role'),
      tenantId: org.id,
      key: 'key_manager',
      name: 'Key manager',
      permissions: ['api_keys.manage', 'api_keys.read', 'tenant.read'],
    });
    const manager = await seedSignedIn(db, { organization: org, roleKey: 'key_manager' });
    const escalate = await createKey(manager.cookie, org.id, { name: 'sneaky', scopes: ['tenant.read', 'users.manage'] });
    expect(escalate.status).toBe(403);
    expect(escalate.json.error.code).toBe('forbidden');
    expect(escalate.json.error.message).toContain('users.manage');
    const allowed = await createKey(manager.cookie, org.id, { name: 'fine', scopes: ['tenant.read'] });
    expect(allowed.status).toBe(201);
    const list = await call('GET', `/v1/tenants/${org.id}/api-keys`, { cookie: manager.cookie });
    expect(list.json.data.map((k: Json) => k.name)).toEqual(['fine']);
  });

  it('an API key, even holding every scope, cannot mint keys: 403 on /v1 and /trpc', async () => {
    const { org } = await adminOf();
    const key = await seedApiKey(server.services.db, { tenantId: org.id, scopes: [...PERMISSIONS] });
    const rest = await call('POST', `/v1/tenants/${org.id}/api-keys`, {
      bearer: key.secretKey,
      body: { name: 'child', scopes: ['tenant.read'] },
    });
    expect(rest.status).toBe(403);
    expect(rest.json.error.code).toBe('forbidden');
    const trpc = await fetch(`${server.url}/trpc/apiKeys.create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.secretKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: org.id, name: 'child', scopes: ['tenant.read'] }),
    });
    expect(trpc.status).toBe(403);
    const rows = await server.services.db.select().from(apiKeys).where(eq(apiKeys.tenantId, org.id));
    expect(rows).toHaveLength(1);
  });
});

describe('GET /v1/tenants/{id}/api-keys', () => {
  it('lists newest first with keyset pages; metadata only, never a secret or hash', async () => {
    const { org, admin } = await adminOf();
    const secrets: string[] = [];
    for (let i = 1; i <= 5; i++) {
      const res = await createKey(admin.cookie, org.id, { name: `Key ${i}`, scopes: ['tenant.read'] });
      secrets.push(res.json.secretKey);
    }
    const names: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await call('GET', `/v1/tenants/${org.id}/api-keys?${query}`, { cookie: admin.cookie });
      expect(page.status, page.text).toBe(200);
      expect(page.json.data.length).toBeLessThanOrEqual(2);
      for (const secret of secrets) {
        expect(page.text).not.toContain(secret);
        expect(page.text).not.toContain(sha256(secret));
      }
      expect(page.text).not.toMatch(/secretHash|secret_hash/);
      names.push(...page.json.data.map((k: Json) => k.name));
      cursor = page.json.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(names).toEqual(['Key 5', 'Key 4', 'Key 3', 'Key 2', 'Key 1']);
  });

  it('stale, foreign and malformed cursors and bad limits are 400', async () => {
    const { db, org, admin } = await adminOf();
    const other = await seedOrganization(db);
    const member = await seedSignedIn(db, { organization: other, roleKey: 'org_admin' });
    for (let i = 0; i < 2; i++) {
      await createKey(member.cookie, other.id, { name: `Other ${i}`, scopes: ['tenant.read'] });
    }
    const foreign = await call('GET', `/v1/tenants/${other.id}/api-keys?limit=1`, { cookie: member.cookie });
    expect(foreign.json.nextCursor).toEqual(expect.any(String));
    const replayed = await call('GET', `/v1/tenants/${org.id}/api-keys?cursor=${foreign.json.nextCursor}`, { cookie: admin.cookie });
    expect(replayed.status).toBe(400);
    expect(replayed.json.error.code).toBe('validation_failed');
    for (const q of ['cursor=not-a-cursor', 'cursor=W10', 'limit=0', 'limit=201', 'limit=abc']) {
      const res = await call('GET', `/v1/tenants/${org.id}/api-keys?${q}`, { cookie: admin.cookie });
      expect(res.status, q).toBe(400);
    }
    expect((await call('GET', '/v1/tenants/key_00000000000000000000/api-keys', { cookie: admin.cookie })).status).toBe(400);
  });

  it('shows active, revoked and expired keys with their status', async () => {
    const { db, org, admin } = await adminOf();
    const active = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'], name: 'active' });
    const revoked = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'], name: 'revoked', revoked: true });
    const expired = await seedApiKey(db, {
      tenantId: org.id,
      scopes: ['tenant.read'],
      name: 'expired',
      expiresAt: new Date(Date.now() - 1000),
    });
    const list = await call('GET', `/v1/tenants/${org.id}/api-keys`, { cookie: admin.cookie });
    const byId = new Map(list.json.data.map((k: Json) => [k.id, k]));
    expect(byId.get(active.id)).toMatchObject({ status: 'active', revokedAt: null });
    expect(byId.get(revoked.id)).toMatchObject({ status: 'revoked', revokedAt: expect.any(String) });
    expect(byId.get(expired.id)).toMatchObject({ status: 'expired', expiresAt: expect.any(String) });
    // An expired key authenticates no more than a revoked one.
    expect((await call('GET', `/v1/tenants/${org.id}`, { bearer: expired.secretKey })).status).toBe(401);
    expect((await call('GET', `/v1/tenants/${org.id}`, { bearer: revoked.secretKey })).status).toBe(401);
    expect((await call('GET', `/v1/tenants/${org.id}`, { bearer: active.secretKey })).status).toBe(200);
  });

  it('lastUsedAt is recorded by the batched flush, not by a write per request', async () => {
    const { db, org, admin } = await adminOf();
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'] });
    const before = Date.now();
    for (let i = 0; i < 3; i++) {
      expect((await call('GET', `/v1/tenants/${org.id}`, { bearer: key.secretKey })).status).toBe(200);
    }
    const lastUsed = async () => {
      const list = await call('GET', `/v1/tenants/${org.id}/api-keys`, { cookie: admin.cookie });
      return (list.json.data as Json[]).find((k) => k.id === key.id)?.lastUsedAt as string | null;
    };
    // Requests alone wrote nothing (the interval is a minute)...
    expect(await lastUsed()).toBeNull();
    // ...the flush writes the time of the last use.
    await server.services.apiKeyUsage.flush();
    const at = await lastUsed();
    expect(at).toEqual(expect.any(String));
    expect(Date.parse(at as string)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(at as string)).toBeLessThanOrEqual(Date.now());
  });
});

describe('GET /v1/api-keys/{id}', () => {
  it("reads one key's metadata, never its secret; another organization's key is the same 404 as an unknown one", async () => {
    const { org, admin } = await adminOf();
    const created = await createKey(admin.cookie, org.id, { name: 'Detail key', scopes: ['tenant.read'] });
    const res = await call('GET', `/v1/api-keys/${created.json.apiKey.id}`, { cookie: admin.cookie });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({ id: created.json.apiKey.id, name: 'Detail key', scopes: ['tenant.read'], status: 'active' });
    expect(res.text).not.toContain(created.json.secretKey);
    expect(res.text).not.toContain(sha256(created.json.secretKey));

    const { admin: stranger } = await adminOf();
    const foreign = await call('GET', `/v1/api-keys/${created.json.apiKey.id}`, { cookie: stranger.cookie });
    const unknown = await call('GET', `/v1/api-keys/${newId('apiKey')}`, { cookie: stranger.cookie });
    expect([foreign.status, unknown.status]).toEqual([404, 404]);
    expect(foreign.json.error.code).toBe(unknown.json.error.code);
    expect((await call('GET', '/v1/api-keys/usr_00000000000000000000', { cookie: admin.cookie })).status).toBe(400);
  });
});

describe('POST /v1/api-keys/{id}/rotate', () => {
  it('returns a new secret once; the old one is refused at once, the new one works; one audit entry', async () => {
    const { org, admin } = await adminOf();
    const created = await createKey(admin.cookie, org.id, { name: 'rotate me', scopes: ['tenant.read'] });
    const old = created.json.secretKey as string;
    const res = await call('POST', `/v1/api-keys/${created.json.apiKey.id}/rotate`, { cookie: admin.cookie, body: {} });
    expect(res.status, res.text).toBe(200);
    expect(res.json.secretKey).toMatch(SECRET);
    expect(res.json.secretKey).not.toBe(old);
    expect(res.json.apiKey).toMatchObject({
      id: created.json.apiKey.id,
      status: 'active',
      secretPrefix: res.json.secretKey.slice(0, 12),
      rotatedAt: expect.any(String),
    });
    const refused = await call('GET', `/v1/tenants/${org.id}`, { bearer: old });
    expect(refused.status).toBe(401);
    expect(refused.json.error.code).toBe('invalid_secret_key');
    expect((await call('GET', `/v1/tenants/${org.id}`, { bearer: res.json.secretKey })).status).toBe(200);
    const entries = await auditOf(created.json.apiKey.id, 'api_key.rotated');
    expect(entries).toHaveLength(1);
    expect(JSON.stringify(entries[0])).not.toContain(res.json.secretKey);
  });

  it('a revoked or expired key is 409; unknown 404, wrong prefix 400; a foreign key is the same 404 as an unknown one', async () => {
    const { db, org, admin } = await adminOf();
    const revoked = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'], revoked: true });
    const expired = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'], expiresAt: new Date(Date.now() - 1000) });
    for (const id of [revoked.id, expired.id]) {
      const res = await call('POST', `/v1/api-keys/${id}/rotate`, { cookie: admin.cookie, body: {} });
      expect(res.status).toBe(409);
      expect(res.json.error.code).toBe('conflict');
      expect(res.text).not.toMatch(/sk_live_/);
    }
    const unknown = await call('POST', '/v1/api-keys/key_00000000000000000000/rotate', { cookie: admin.cookie, body: {} });
    expect(unknown.status).toBe(404);
    expect((await call('POST', '/v1/api-keys/ten_00000000000000000000/rotate', { cookie: admin.cookie, body: {} })).status).toBe(400);
    const otherOrg = await seedOrganization(db, { name: 'Secret Other Org' });
    const foreign = await seedApiKey(db, { tenantId: otherOrg.id, scopes: ['tenant.read'] });
    const probe = await call('POST', `/v1/api-keys/${foreign.id}/rotate`, { cookie: admin.cookie, body: {} });
    expect(probe.status).toBe(404);
    expect(probe.json.error.code).toBe(unknown.json.error.code);
    expect(probe.json.error.message).toBe(unknown.json.error.message);
    expect(probe.text).not.toContain('Secret Other Org');
    // The foreign key still works: nothing was rotated.
    expect((await call('GET', `/v1/tenants/${otherOrg.id}`, { bearer: foreign.secretKey })).status).toBe(200);
  });

  it('a caller cannot rotate (and so obtain) a key broader than its own permissions', async () => {
    const { db, org } = await adminOf();
    await db.insert(roles).values({
      id: newId('role'),
      tenantId: org.id,
      key: 'key_rotator',
      name: 'Key rotator',
      permissions: ['api_keys.manage', 'tenant.read'],
    });
    const rotator = await seedSignedIn(db, { organization: org, roleKey: 'key_rotator' });
    const broad = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read', 'users.manage'] });
    const res = await call('POST', `/v1/api-keys/${broad.id}/rotate`, { cookie: rotator.cookie, body: {} });
    expect(res.status).toBe(403);
    expect(res.text).not.toMatch(/sk_live_/);
    expect((await call('GET', `/v1/tenants/${org.id}`, { bearer: broad.secretKey })).status).toBe(200);
  });
});

describe('POST /v1/api-keys/{id}/revoke', () => {
  it("revokes: the key's next request is 401; revoking again is idempotent (same revokedAt, one audit entry)", async () => {
    const { org, admin } = await adminOf();
    const created = await createKey(admin.cookie, org.id, { name: 'short-lived', scopes: ['tenant.read'] });
    const { secretKey } = created.json;
    const id = created.json.apiKey.id as string;
    expect((await call('GET', `/v1/tenants/${org.id}`, { bearer: secretKey })).status).toBe(200);
    const first = await call('POST', `/v1/api-keys/${id}/revoke`, { cookie: admin.cookie, body: {} });
    expect(first.status, first.text).toBe(200);
    expect(first.json).toMatchObject({ id, status: 'revoked', revokedAt: expect.any(String) });
    expect(first.text).not.toContain(secretKey);
    const refused = await call('GET', `/v1/tenants/${org.id}`, { bearer: secretKey });
    expect(refused.status).toBe(401);
    expect(refused.json.error.code).toBe('invalid_secret_key');

    const again = await call('POST', `/v1/api-keys/${id}/revoke`, { cookie: admin.cookie, body: {} });
    expect(again.status).toBe(200);
    expect(again.json.revokedAt).toBe(first.json.revokedAt);
    expect(await auditOf(id, 'api_key.revoked')).toHaveLength(1);
  });

  it('a key with api_keys.manage may revoke itself (audited as the key); foreign ids 404, wrong prefix 400', async () => {
    const { db, org, admin } = await adminOf();
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['api_keys.manage', 'tenant.read'] });
    const res = await call('POST', `/v1/api-keys/${key.id}/revoke`, { bearer: key.secretKey, body: {} });
    expect(res.status, res.text).toBe(200);
    const [entry] = await auditOf(key.id, 'api_key.revoked');
    expect(entry).toMatchObject({ actorType: 'api_key', actorId: key.id, tenantId: org.id });
    expect((await call('GET', `/v1/tenants/${org.id}`, { bearer: key.secretKey })).status).toBe(401);

    const otherOrg = await seedOrganization(db);
    const foreign = await seedApiKey(db, { tenantId: otherOrg.id, scopes: ['tenant.read'] });
    expect((await call('POST', `/v1/api-keys/${foreign.id}/revoke`, { cookie: admin.cookie, body: {} })).status).toBe(404);
    expect((await call('GET', `/v1/tenants/${otherOrg.id}`, { bearer: foreign.secretKey })).status).toBe(200);
    expect((await call('POST', '/v1/api-keys/usr_00000000000000000000/revoke', { cookie: admin.cookie, body: {} })).status).toBe(400);
    expect((await call('POST', '/v1/api-keys/key_00000000000000000000/revoke', { cookie: admin.cookie, body: {} })).status).toBe(404);
  });
});

describe('a key never holds more than its creator may do directly', () => {
  /** A member whose custom role lists admin-only permissions beside api_keys.manage. */
  async function integratorOf() {
    const { db, org, admin } = await adminOf();
    await db.insert(roles).values({
      id: newId('role'),
      tenantId: org.id,
      key: 'integrator',
      name: 'Integrator',
      permissions: ['api_keys.manage', 'api_keys.read', 'exports.create', 'tenant.read', 'webhooks.manage', 'webhooks.read'],
    });
    const member = await seedSignedIn(db, { organization: org, roleKey: 'integrator' });
    return { db, org, admin, member };
  }

  const exportAll = (auth: { cookie?: string; bearer?: string }, slug: string) =>
    call('POST', '/v1/export/all', { ...auth, body: { organization_slug: slug, format: 'json' } });
  const hook = (auth: { cookie?: string; bearer?: string }, slug: string) =>
    call('POST', '/v1/webhook-endpoints', {
      ...auth,
      body: { organization_slug: slug, url: 'https://hooks.example.com/x', eventTypes: ['tenant.updated'] },
    });

  it('a member refused exports and webhooks directly cannot mint a key that does them: 403 at creation, nothing created', async () => {
    const { db, org, member } = await integratorOf();
    expect((await exportAll({ cookie: member.cookie }, org.slug)).status).toBe(403);
    expect((await hook({ cookie: member.cookie }, org.slug)).status).toBe(403);

    const minted = await createKey(member.cookie, org.id, { name: 'exfiltrate', scopes: ['exports.create', 'webhooks.manage'] });
    expect(minted.status, minted.text).toBe(403);
    expect(minted.json.error.code).toBe('forbidden');
    expect(minted.json.error.message).toContain('exports.create');
    expect(minted.json.error.message).toContain('webhooks.manage');
    expect(await db.select().from(apiKeys).where(eq(apiKeys.tenantId, org.id))).toHaveLength(0);

    // What the member may do directly, a key may do too.
    const fine = await createKey(member.cookie, org.id, { name: 'reader', scopes: ['tenant.read', 'webhooks.read'] });
    expect(fine.status, fine.text).toBe(201);
  });

  it('a key such a member holds from before is refused the admin-only routes at use', async () => {
    const { db, org, member } = await integratorOf();
    const key = await seedApiKey(db, {
      tenantId: org.id,
      scopes: ['exports.create', 'tenant.read', 'webhooks.manage'],
      createdBy: member.user.id,
    });
    const exported = await exportAll({ bearer: key.secretKey }, org.slug);
    expect(exported.status, exported.text).toBe(403);
    expect(exported.json.error.message).toMatch(/org admin/);
    expect((await hook({ bearer: key.secretKey }, org.slug)).status).toBe(403);
    expect((await call('GET', `/v1/tenants/${org.id}`, { bearer: key.secretKey })).status).toBe(200);
  });

  it('a key created by an org admin loses admin-only abilities on its next request once the admin is demoted; removal voids it', async () => {
    const { db, org, admin } = await adminOf();
    const created = await createKey(admin.cookie, org.id, {
      name: 'ops',
      scopes: ['exports.create', 'tenant.read', 'users.read', 'webhooks.manage'],
    });
    expect(created.status, created.text).toBe(201);
    const bearer = created.json.secretKey as string;
    expect((await exportAll({ bearer }, org.slug)).status).toBe(202);
    expect((await call('GET', `/v1/users?organization_slug=${org.slug}`, { bearer })).status).toBe(200);

    await db
      .update(memberships)
      .set({ roleKey: 'org_member' })
      .where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, admin.user.id)));
    const exported = await exportAll({ bearer }, org.slug);
    expect(exported.status, exported.text).toBe(403);
    expect(exported.json.error.code).toBe('forbidden');
    expect((await hook({ bearer }, org.slug)).status).toBe(403);
    // Scopes the creator no longer holds go too; what an org_member may do stays.
    expect((await call('GET', `/v1/users?organization_slug=${org.slug}`, { bearer })).status).toBe(403);
    expect((await call('GET', `/v1/tenants/${org.id}`, { bearer })).status).toBe(200);

    await db.delete(memberships).where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, admin.user.id)));
    const removed = await call('GET', `/v1/tenants/${org.id}`, { bearer });
    expect(removed.status).toBe(401);
    expect(removed.json.error.code).toBe('invalid_secret_key');
    expect(removed.json.error.message).toMatch(/void/);
  });

  it('a key whose creator is suspended, or deleted (no creator), is void: 401; a platform admin creator counts as org admin', async () => {
    const { db, org, admin } = await adminOf();
    const suspendedKey = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'], createdBy: admin.user.id });
    expect((await call('GET', `/v1/tenants/${org.id}`, { bearer: suspendedKey.secretKey })).status).toBe(200);
    await db.update(users).set({ status: 'suspended' }).where(eq(users.id, admin.user.id));
    expect((await call('GET', `/v1/tenants/${org.id}`, { bearer: suspendedKey.secretKey })).status).toBe(401);

    // Suspended within this organization only (or back to a pending invitation): void here too.
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const memberKey = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'], createdBy: member.user.id });
    expect((await call('GET', `/v1/tenants/${org.id}`, { bearer: memberKey.secretKey })).status).toBe(200);
    for (const status of ['suspended', 'invited'] as const) {
      await db
        .update(memberships)
        .set({ status })
        .where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, member.user.id)));
      const res = await call('GET', `/v1/tenants/${org.id}`, { bearer: memberKey.secretKey });
      expect(res.status, status).toBe(401);
      expect(res.json.error.message).toMatch(/void/);
    }

    const orphan = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'], createdBy: null });
    const refused = await call('GET', `/v1/tenants/${org.id}`, { bearer: orphan.secretKey });
    expect(refused.status).toBe(401);
    expect(refused.json.error.code).toBe('invalid_secret_key');

    const platform = await seedSignedIn(db, { platformAdmin: true });
    const platformKey = await seedApiKey(db, { tenantId: org.id, scopes: ['exports.create'], createdBy: platform.user.id });
    expect((await call('GET', `/v1/exports?organization_slug=${org.slug}`, { bearer: platformKey.secretKey })).status).toBe(200);
  });

  it('a key with api_keys.manage cannot revoke a broader key: 403, the broader key keeps working', async () => {
    const { db, org } = await adminOf();
    const broad = await seedApiKey(db, { tenantId: org.id, scopes: [...PERMISSIONS] });
    const narrow = await seedApiKey(db, { tenantId: org.id, scopes: ['api_keys.manage', 'api_keys.read'] });
    const res = await call('POST', `/v1/api-keys/${broad.id}/revoke`, { bearer: narrow.secretKey, body: {} });
    expect(res.status, res.text).toBe(403);
    expect(res.json.error.code).toBe('forbidden');
    expect(res.json.error.message).toContain('users.manage');
    expect((await call('GET', `/v1/tenants/${org.id}`, { bearer: broad.secretKey })).status).toBe(200);
    const [row] = await db.select().from(apiKeys).where(eq(apiKeys.id, broad.id));
    expect(row?.revokedAt).toBeNull();
    // ... nor rotate it (and so obtain its secret), with a key or as a member holding the same.
    const rotated = await call('POST', `/v1/api-keys/${broad.id}/rotate`, { bearer: narrow.secretKey, body: {} });
    expect(rotated.status).toBe(403);
    expect(rotated.text).not.toMatch(/sk_live_/);
    // A sibling of its own size it may revoke.
    const sibling = await seedApiKey(db, { tenantId: org.id, scopes: ['api_keys.read'] });
    expect((await call('POST', `/v1/api-keys/${sibling.id}/revoke`, { bearer: narrow.secretKey, body: {} })).status).toBe(200);
  });
});

describe('tenant API keys on control-plane routes: within their scopes and their organization', () => {
  it('users.read cannot read the tenant (403), tenant.read can (200), another tenant is 404, and tenant.read cannot update', async () => {
    const { db, org } = await adminOf();
    const other = await seedOrganization(db, { name: 'Elsewhere Inc' });
    const usersOnly = await seedApiKey(db, { tenantId: org.id, scopes: ['users.read'] });
    const tenantRead = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'] });

    const forbidden = await call('GET', `/v1/tenants/${org.id}`, { bearer: usersOnly.secretKey });
    expect(forbidden.status).toBe(403);
    expect(forbidden.json.error.code).toBe('forbidden');
    const ok = await call('GET', `/v1/tenants/${org.id}`, { bearer: tenantRead.secretKey });
    expect(ok.status).toBe(200);
    expect(ok.json).toMatchObject({ id: org.id, slug: org.slug });
    const elsewhere = await call('GET', `/v1/tenants/${other.id}`, { bearer: tenantRead.secretKey });
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.text).not.toContain('Elsewhere Inc');
    const update = await call('PATCH', `/v1/tenants/${org.id}`, { bearer: tenantRead.secretKey, body: { name: 'Hijacked' } });
    expect(update.status).toBe(403);
    // The same over /trpc.
    const viaTrpc = await fetch(`${server.url}/trpc/tenants.get?input=${encodeURIComponent(JSON.stringify({ id: org.id }))}`, {
      headers: { authorization: `Bearer ${usersOnly.secretKey}` },
    });
    expect(viaTrpc.status).toBe(403);
  });

  it('an application secret key is not a tenant API key (403); a malformed or unknown bearer is 401', async () => {
    const { org } = await adminOf();
    const app = await seedApplication(server.services.db);
    const asApp = await call('GET', `/v1/tenants/${org.id}/api-keys`, { bearer: app.secretKey });
    expect(asApp.status).toBe(403);
    for (const bearer of ['sk_live_short', `sk_live_${'Z'.repeat(40)}`]) {
      const res = await call('GET', `/v1/tenants/${org.id}/api-keys`, { bearer });
      expect(res.status, bearer).toBe(401);
      expect(res.json.error.code).toBe('invalid_secret_key');
    }
  });
});

describe('OpenAPI', () => {
  it('documents the four routes, create as 201, under the api-keys tag', async () => {
    const res = await call('GET', '/v1/openapi.json');
    const paths = res.json.paths as Json;
    expect(Object.keys(paths['/tenants/{id}/api-keys'] ?? {}).sort()).toEqual(['get', 'post']);
    expect(Object.keys(paths['/tenants/{id}/api-keys'].post.responses)).toContain('201');
    expect(Object.keys(paths['/tenants/{id}/api-keys'].post.responses)).not.toContain('200');
    expect(paths['/api-keys/{id}/rotate'].post.tags).toEqual(['api-keys']);
    expect(paths['/api-keys/{id}/revoke'].post.security).toEqual([{ sessionCookie: [] }, { secretKey: [] }]);
    expect(paths['/api-keys/{id}/rotate'].post.security).toEqual([{ sessionCookie: [] }]);
  });
});

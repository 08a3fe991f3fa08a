import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { newId } from '@svc/contracts/ids';
import { applications } from '@svc/db/schema/applications';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { apiPermissions } from '@svc/db/schema/authorization';
import { roles } from '@svc/db/schema/roles';
import { webhookEvents } from '@svc/db/schema/webhooks';
import { and, asc, eq } from 'drizzle-orm';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApiResource, seedApplication, setBuiltinProductPermissions } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { runCli } from '../../../../../test/support/spawn.ts';
import { type SignedIn, seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { applicationClients } from '../oidc-provider/clients.ts';

/**
 * Machine clients on the applications side (issue 29 item 5): what may be stored, by whom, and
 * what an organization's admin may do with one. Each test names the rule it breaks if it fails.
 */

let server: Awaited<ReturnType<typeof startTestServer>>;
type Json = any;

/** The product's catalog in this database: org admins hold the invoices permissions, not reports.export. */
const HELD = ['invoices.create', 'invoices.read'];
const NOT_HELD = 'reports.export';

let rsa: JWK;
let ec256: JWK;
let ec384: JWK;
let ed25519: JWK;

beforeAll(async () => {
  server = await startTestServer();
  await seedApiResource(server.services.db, { identifier: 'https://api.invoices.example', name: 'Invoices', permissions: HELD });
  await seedApiResource(server.services.db, {
    identifier: 'https://api.reports.example',
    name: 'Reports',
    permissions: [NOT_HELD, 'reports.read'],
  });
  await setBuiltinProductPermissions(server.services.db, 'org_admin', [...HELD, 'reports.read']);
  const publicJwk = async (alg: string, opts: { crv?: string } = {}) =>
    exportJWK((await generateKeyPair(alg, { extractable: true, ...opts })).publicKey);
  rsa = { ...(await publicJwk('RS256')), kid: 'rsa-1' };
  ec256 = { ...(await publicJwk('ES256')), kid: 'ec-256' };
  ec384 = { ...(await publicJwk('ES384')), kid: 'ec-384' };
  ed25519 = { ...(await publicJwk('EdDSA')), kid: 'ed-1' };
});
afterAll(async () => {
  await server?.close();
});

async function call(
  method: string,
  urlPath: string,
  opts: { cookie?: string; authorization?: string; body?: unknown } = {},
): Promise<{ status: number; body: Json; text: string }> {
  const res = await fetch(`${server.url}${urlPath}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(opts.authorization ? { authorization: opts.authorization } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
}

async function adminOfNewOrg(): Promise<{ org: Awaited<ReturnType<typeof seedOrganization>>; admin: SignedIn }> {
  const org = await seedOrganization(server.services.db);
  const admin = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_admin' });
  return { org, admin };
}

function createMachine(caller: SignedIn, org: { slug: string }, body: Record<string, unknown> = {}) {
  return call('POST', '/v1/applications', {
    cookie: caller.cookie,
    body: { organization_slug: org.slug, name: 'Billing job', clientType: 'machine', ...body },
  });
}

async function applicationsOf(tenantId: string) {
  return server.services.db.select().from(applications).where(eq(applications.tenantId, tenantId));
}

async function auditOf(tenantId: string, action: string) {
  return server.services.db
    .select()
    .from(auditLogs)
    .where(and(eq(auditLogs.tenantId, tenantId), eq(auditLogs.action, action)))
    .orderBy(asc(auditLogs.createdAt), asc(auditLogs.id));
}

async function eventsOf(tenantId: string, type: string) {
  return server.services.db
    .select()
    .from(webhookEvents)
    .where(and(eq(webhookEvents.tenantId, tenantId), eq(webhookEvents.type, type)));
}

/** Runs a refused create and checks its answer, and that the organization has no application after it. */
async function expectRefusedCreate(
  caller: SignedIn,
  org: { id: string; slug: string },
  body: Record<string, unknown>,
  status: number,
  code: string,
) {
  const res = await createMachine(caller, org, body);
  expect(res.status, `${JSON.stringify(body).slice(0, 200)}: ${res.text}`).toBe(status);
  expect(res.body.error.code, res.text).toBe(code);
  expect(await applicationsOf(org.id)).toEqual([]);
  expect(await auditOf(org.id, 'application.created')).toEqual([]);
  return res;
}

describe('POST /v1/applications with clientType machine', () => {
  it('an org admin creates one with permissions it holds: client_secret_basic by default, no sign-in settings; audited, with the webhook event', async () => {
    const { org, admin } = await adminOfNewOrg();
    const res = await createMachine(admin, org, { permissions: ['invoices.read', 'invoices.create', 'invoices.read'] });
    expect(res.status, res.text).toBe(201);
    const { application, secretKey } = res.body;
    expect(application).toMatchObject({
      clientType: 'machine',
      tokenEndpointAuthMethod: 'client_secret_basic',
      jwks: null,
      jwksUri: null,
      permissions: ['invoices.create', 'invoices.read'],
      redirectUrls: [],
      allowedOrigins: [],
      postLogoutRedirectUrls: [],
      backchannelLogoutUrl: null,
    });
    // Its secret key is what it authenticates with (and a backend key of svc, like any application's).
    expect((await call('GET', '/v1/backend/application', { authorization: `Bearer ${secretKey}` })).status).toBe(200);
    const [row] = await applicationsOf(org.id);
    expect(row?.machinePermissions).toEqual(['invoices.create', 'invoices.read']);
    const [entry] = await auditOf(org.id, 'application.created');
    expect(entry?.summary).toMatchObject({ clientType: 'machine', authMethod: 'client_secret_basic', permissions: HELD });
    const [event] = await eventsOf(org.id, 'application.created');
    expect(event?.data).toMatchObject({ id: application.id, permissions: HELD });
    expect(JSON.stringify(event)).not.toContain(secretKey.slice(8));
    // Read back the same way.
    expect((await call('GET', `/v1/applications/${application.id}`, { cookie: admin.cookie })).body).toEqual(application);
  });

  it('permissions the org admin does not hold: 403 forbidden naming them, nothing stored', async () => {
    const { org, admin } = await adminOfNewOrg();
    const res = await expectRefusedCreate(admin, org, { permissions: ['invoices.read', NOT_HELD] }, 403, 'forbidden');
    expect(res.body.error.message).toContain(NOT_HELD);
    expect(res.body.error.message).not.toContain('invoices.read');
  });

  it('a platform admin holds every product permission', async () => {
    const org = await seedOrganization(server.services.db);
    const platform = await seedSignedIn(server.services.db, { platformAdmin: true });
    const res = await createMachine(platform, org, { permissions: [NOT_HELD] });
    expect(res.status, res.text).toBe(201);
    expect(res.body.application.permissions).toEqual([NOT_HELD]);
  });

  it('a member holds what their own role grants: a custom role with applications.manage grants only its product permissions', async () => {
    const { org } = await adminOfNewOrg();
    await server.services.db.insert(roles).values({
      id: newId('role'),
      tenantId: org.id,
      key: 'integrator',
      name: 'Integrator',
      permissions: ['applications.manage', 'applications.read'],
      productPermissions: ['invoices.read'],
    });
    const integrator = await seedSignedIn(server.services.db, { organization: org, roleKey: 'integrator' });
    await expectRefusedCreate(integrator, org, { permissions: ['invoices.create'] }, 403, 'forbidden');
    const ok = await createMachine(integrator, org, { permissions: ['invoices.read'] });
    expect(ok.status, ok.text).toBe(201);
  });

  it('a tenant member (org_member, not admin) is 403 and stores nothing', async () => {
    const { org } = await adminOfNewOrg();
    const member = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_member' });
    await expectRefusedCreate(member, org, { permissions: ['invoices.read'] }, 403, 'forbidden');
    await expectRefusedCreate(member, org, {}, 403, 'forbidden');
  });

  it('a tenant API key: its creator must be an org admin for the product permissions to be held', async () => {
    const { org, admin } = await adminOfNewOrg();
    const ofAdmin = await seedApiKey(server.services.db, { tenantId: org.id, scopes: ['applications.manage'], createdBy: admin.user.id });
    const created = await call('POST', '/v1/applications', {
      authorization: ofAdmin.authorization,
      body: { name: 'Key-made job', clientType: 'machine', permissions: ['invoices.read'] },
    });
    expect(created.status, created.text).toBe(201);
    const refused = await call('POST', '/v1/applications', {
      authorization: ofAdmin.authorization,
      body: { name: 'Key-made job 2', clientType: 'machine', permissions: [NOT_HELD] },
    });
    expect(refused.status, refused.text).toBe(403);
  });

  it('sign-in settings are refused with client_type_mismatch, one by one, and nothing is stored', async () => {
    const { org, admin } = await adminOfNewOrg();
    for (const body of [
      { redirectUrls: ['https://app.example.com/callback'] },
      { allowedOrigins: ['https://app.example.com'] },
      { postLogoutRedirectUrls: ['https://app.example.com/bye'] },
      { backchannelLogoutUrl: 'https://app.example.com/backchannel' },
      { signInAudience: 'members' },
      { signInAudience: 'anyone' },
      { oauth: { productionProvider: 'google' } },
    ]) {
      const res = await expectRefusedCreate(admin, org, body, 400, 'client_type_mismatch');
      expect(res.body.error.message).toContain(Object.keys(body)[0]);
    }
    // "None" is not a setting: empty lists and null pass.
    const ok = await createMachine(admin, org, { redirectUrls: [], allowedOrigins: [], backchannelLogoutUrl: null });
    expect(ok.status, ok.text).toBe(201);
  });

  it('other client types may not have permissions, keys or an auth method (client_type_mismatch)', async () => {
    const { org, admin } = await adminOfNewOrg();
    for (const clientType of ['confidential', 'public', undefined]) {
      for (const body of [
        { permissions: ['invoices.read'] },
        { jwks: { keys: [rsa] } },
        { jwksUri: 'https://93.184.215.14/jwks.json' },
        { tokenEndpointAuthMethod: 'client_secret_basic' },
      ]) {
        await expectRefusedCreate(admin, org, { clientType, ...body }, 400, 'client_type_mismatch');
      }
    }
  });

  it('unknown permission names: 400 unknown_permission naming them; malformed ones 400 validation_failed; nothing stored', async () => {
    const { org, admin } = await adminOfNewOrg();
    const res = await expectRefusedCreate(admin, org, { permissions: ['invoices.read', 'invoices.delete'] }, 400, 'unknown_permission');
    expect(res.body.error.message).toContain('invoices.delete');
    // svc's own catalog is not the product's.
    await expectRefusedCreate(admin, org, { permissions: ['applications.manage'] }, 400, 'unknown_permission');
    for (const name of ['Invoices.Read', ' invoices.read', 'invoices.reаd', 'x'.repeat(101)]) {
      await expectRefusedCreate(admin, org, { permissions: [name] }, 400, 'validation_failed');
    }
  });
});

describe('private_key_jwt keys', () => {
  const keyed = (jwks: unknown) => ({ tokenEndpointAuthMethod: 'private_key_jwt', jwks });

  it('accepts public RSA (2048+), EC P-256 / P-384 and Ed25519 keys, as an object or JSON text, stored with public members only', async () => {
    const { org, admin } = await adminOfNewOrg();
    const res = await createMachine(
      admin,
      org,
      keyed({ keys: [{ ...rsa, use: 'sig', alg: 'RS256', x5t: 'ignored' }, ec256, ec384, ed25519] }),
    );
    expect(res.status, res.text).toBe(201);
    const { application } = res.body;
    expect(application.tokenEndpointAuthMethod).toBe('private_key_jwt');
    expect(application.jwksUri).toBeNull();
    expect(application.jwks.keys.map((k: JWK) => k.kid)).toEqual(['rsa-1', 'ec-256', 'ec-384', 'ed-1']);
    expect(application.jwks.keys[0]).toEqual({ kty: 'RSA', kid: 'rsa-1', use: 'sig', alg: 'RS256', n: rsa.n, e: rsa.e });
    const [entry] = await auditOf(org.id, 'application.created');
    expect((entry?.summary as Json | undefined)?.jwks).toEqual([
      { kid: 'rsa-1', kty: 'RSA', thumbprint: expect.any(String) },
      { kid: 'ec-256', kty: 'EC', thumbprint: expect.any(String) },
      { kid: 'ec-384', kty: 'EC', thumbprint: expect.any(String) },
      { kid: 'ed-1', kty: 'OKP', thumbprint: expect.any(String) },
    ]);

    const text = await createMachine(admin, org, { name: 'From text', ...keyed(JSON.stringify({ keys: [{ ...ec256, kid: undefined }] })) });
    expect(text.status, text.text).toBe(201);
    expect(text.body.application.jwks).toEqual({ keys: [{ kty: 'EC', crv: 'P-256', x: ec256.x, y: ec256.y }] });
  });

  it('refuses private keys, symmetric keys, bad JSON and every other malformed set with 400 jwks_invalid; nothing stored', async () => {
    const { org, admin } = await adminOfNewOrg();
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const privateRsa = pair.privateKey.export({ format: 'jwk' });
    const shortRsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'jwk' });
    const p521 = generateKeyPairSync('ec', { namedCurve: 'P-521' }).publicKey.export({ format: 'jwk' });
    const privateEd = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' });
    const cases: [string, unknown, RegExp][] = [
      ['an RSA private key', { keys: [privateRsa] }, /private key material \(d, p, q, dp, dq, qi\)/],
      ['an Ed25519 private key', { keys: [privateEd] }, /private key material \(d\)/],
      ['a symmetric key', { keys: [{ kty: 'oct', k: 'c2VjcmV0LXNlY3JldC1zZWNyZXQ', alg: 'HS256' }] }, /symmetric/],
      ['JSON text that is not JSON', '{"keys": [', /not valid JSON/],
      ['a JSON array', '[]', /"keys" array/],
      ['keys that is not an array', { keys: 'nope' }, /"keys" array/],
      ['no keys', { keys: [] }, /no keys/],
      ['a key that is not an object', { keys: ['rsa'] }, /JSON object/],
      ['an RSA key under 2048 bits', { keys: [shortRsa] }, /at least 2048 bits/],
      ['an EC key on P-521', { keys: [p521] }, /P-256 or P-384/],
      ['an unknown key type', { keys: [{ kty: 'XYZ' }] }, /not supported/],
      ['an EC point off its curve', { keys: [{ ...ec256, y: ec384.y }] }, /not a valid EC P-256 public key/],
      ['an RSA key without its exponent', { keys: [{ kty: 'RSA', n: rsa.n }] }, /needs n, e/],
      ['an HMAC alg on an RSA key', { keys: [{ ...rsa, alg: 'HS256' }] }, /"alg"/],
      ['an alg of another key type', { keys: [{ ...ec256, alg: 'RS256' }] }, /"alg"/],
      ['an encryption key', { keys: [{ ...rsa, use: 'enc' }] }, /"use"/],
      ['key_ops beyond verify', { keys: [{ ...rsa, key_ops: ['verify', 'sign'] }] }, /key_ops/],
      ['11 keys', { keys: Array.from({ length: 11 }, (_, i) => ({ ...ec256, kid: `k${i}` })) }, /at most 10 keys/],
      ['repeated kids', { keys: [rsa, { ...ec256, kid: 'rsa-1' }] }, /unique: rsa-1/],
      ['several keys without kids', { keys: [{ ...rsa, kid: undefined }, ec256] }, /each needs a "kid"/],
    ];
    for (const [what, jwks, message] of cases) {
      const res = await expectRefusedCreate(admin, org, keyed(jwks), 400, 'jwks_invalid');
      expect(res.body.error.message, what).toMatch(message);
    }
    // The private parts never reach the log of the answer, either.
    const res = await createMachine(admin, org, keyed({ keys: [privateRsa] }));
    expect(res.text).not.toContain(String(privateRsa.d).slice(0, 16));
  });

  it('private_key_jwt needs jwks or jwksUri, one of them; client_secret_basic takes neither', async () => {
    const { org, admin } = await adminOfNewOrg();
    await expectRefusedCreate(admin, org, { tokenEndpointAuthMethod: 'private_key_jwt' }, 400, 'jwks_invalid');
    await expectRefusedCreate(admin, org, { ...keyed(null), jwksUri: null }, 400, 'jwks_invalid');
    await expectRefusedCreate(admin, org, { ...keyed({ keys: [rsa] }), jwksUri: 'https://93.184.215.14/jwks.json' }, 400, 'jwks_invalid');
    await expectRefusedCreate(admin, org, { jwks: { keys: [rsa] } }, 400, 'client_type_mismatch');
    await expectRefusedCreate(
      admin,
      org,
      { tokenEndpointAuthMethod: 'client_secret_basic', jwksUri: 'https://93.184.215.14/jwks.json' },
      400,
      'client_type_mismatch',
    );
  });

  it('jwksUri: https to a public address only, by the webhook address table; 400 jwks_invalid otherwise, nothing stored', async () => {
    const { org, admin } = await adminOfNewOrg();
    for (const uri of [
      'http://93.184.215.14/jwks.json',
      'https://169.254.169.254/latest/meta-data/',
      'https://[::ffff:a9fe:a9fe]/jwks',
      'https://[fd00:ec2::254]/jwks',
      'https://127.0.0.1/jwks',
      'https://10.0.0.8/jwks',
      'https://user:pass@93.184.215.14/jwks',
      'https://93.184.215.14/jwks#frag',
      'not a url',
      'javascript:alert(1)',
    ]) {
      const res = await expectRefusedCreate(admin, org, { tokenEndpointAuthMethod: 'private_key_jwt', jwksUri: uri }, 400, 'jwks_invalid');
      expect(res.body.error.message, uri).toMatch(/jwksUri/);
    }
    const ok = await createMachine(admin, org, { tokenEndpointAuthMethod: 'private_key_jwt', jwksUri: 'HTTPS://93.184.215.14/jwks.json' });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body.application).toMatchObject({ jwksUri: 'https://93.184.215.14/jwks.json', jwks: null });
  });
});

describe('changing a machine client', () => {
  it('permissions: replaced whole, audited with the list before and after, in the application.updated event', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = (await createMachine(admin, org, { permissions: ['invoices.read'] })).body;
    const res = await call('PATCH', `/v1/applications/${application.id}`, {
      cookie: admin.cookie,
      body: { permissions: ['invoices.create', 'reports.read'] },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.permissions).toEqual(['invoices.create', 'reports.read']);
    const [entry] = await auditOf(org.id, 'application.updated');
    expect(entry?.summary).toMatchObject({
      changes: { permissions: ['invoices.create', 'reports.read'] },
      previous: { permissions: ['invoices.read'] },
    });
    const [event] = await eventsOf(org.id, 'application.updated');
    expect(event?.data).toMatchObject({ changes: { permissions: ['invoices.create', 'reports.read'] } });
  });

  it('adding a permission the caller lacks is 403 and changes nothing', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = (await createMachine(admin, org, { permissions: ['invoices.read'] })).body;
    const res = await call('PATCH', `/v1/applications/${application.id}`, { cookie: admin.cookie, body: { permissions: [NOT_HELD] } });
    expect(res.status, res.text).toBe(403);
    const [row] = await applicationsOf(org.id);
    expect(row?.machinePermissions).toEqual(['invoices.read']);
    expect(await auditOf(org.id, 'application.updated')).toEqual([]);
  });

  it("another organization's machine client is 404, with and without organization_slug, and nothing changes", async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = (await createMachine(admin, org, { permissions: ['invoices.read'] })).body;
    const other = await adminOfNewOrg();
    for (const body of [
      { permissions: [] },
      { organization_slug: other.org.slug, permissions: [] },
      { organization_slug: org.slug, name: 'x' },
    ]) {
      const res = await call('PATCH', `/v1/applications/${application.id}`, { cookie: other.admin.cookie, body });
      expect(res.status, res.text).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    for (const route of ['status', 'rotate-secret']) {
      const res = await call('POST', `/v1/applications/${application.id}/${route}`, {
        cookie: other.admin.cookie,
        body: { status: 'disabled' },
      });
      expect(res.status, res.text).toBe(404);
    }
    const [row] = await applicationsOf(org.id);
    expect(row).toMatchObject({ machinePermissions: ['invoices.read'], status: 'active', name: 'Billing job' });
  });

  it('a machine client stays one, no other application becomes one, and sign-in settings stay refused', async () => {
    const { org, admin } = await adminOfNewOrg();
    const machine = (await createMachine(admin, org)).body.application;
    const web = (await call('POST', '/v1/applications', { cookie: admin.cookie, body: { organization_slug: org.slug, name: 'Web' } })).body
      .application;
    for (const [id, body] of [
      [machine.id, { clientType: 'confidential' }],
      [machine.id, { clientType: 'public' }],
      [machine.id, { redirectUrls: ['https://app.example.com/cb'] }],
      [machine.id, { signInAudience: 'members' }],
      [web.id, { clientType: 'machine' }],
      [web.id, { permissions: ['invoices.read'] }],
      [web.id, { jwksUri: 'https://93.184.215.14/jwks.json' }],
    ] as const) {
      const res = await call('PATCH', `/v1/applications/${id}`, { cookie: admin.cookie, body });
      expect(res.status, `${JSON.stringify(body)}: ${res.text}`).toBe(400);
      expect(res.body.error.code).toBe('client_type_mismatch');
    }
    // Saying what it already is changes nothing and is fine.
    expect(
      (await call('PATCH', `/v1/applications/${machine.id}`, { cookie: admin.cookie, body: { clientType: 'machine', name: 'Job' } }))
        .status,
    ).toBe(200);
  });

  it('switching to private_key_jwt needs keys; jwks and jwksUri replace each other; back to client_secret_basic drops them', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = (await createMachine(admin, org)).body;
    const patch = (body: Record<string, unknown>) => call('PATCH', `/v1/applications/${application.id}`, { cookie: admin.cookie, body });
    const missing = await patch({ tokenEndpointAuthMethod: 'private_key_jwt' });
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('jwks_invalid');
    const keyed = await patch({ tokenEndpointAuthMethod: 'private_key_jwt', jwks: { keys: [ed25519] } });
    expect(keyed.status, keyed.text).toBe(200);
    expect(keyed.body).toMatchObject({
      tokenEndpointAuthMethod: 'private_key_jwt',
      jwks: { keys: [{ kid: 'ed-1', kty: 'OKP' }] },
      jwksUri: null,
    });
    const uri = await patch({ jwksUri: 'https://93.184.215.14/keys' });
    expect(uri.body).toMatchObject({ jwks: null, jwksUri: 'https://93.184.215.14/keys' });
    const cleared = await patch({ jwksUri: null });
    expect(cleared.status).toBe(400);
    expect(cleared.body.error.code).toBe('jwks_invalid');
    const bad = await patch({ jwks: { keys: [{ kty: 'oct', k: 'AAAA' }] } });
    expect(bad.body.error.code).toBe('jwks_invalid');
    const secret = await patch({ tokenEndpointAuthMethod: 'client_secret_basic' });
    expect(secret.body).toMatchObject({ tokenEndpointAuthMethod: 'client_secret_basic', jwks: null, jwksUri: null });
    const entries = await auditOf(org.id, 'application.updated');
    expect(entries.map((e) => (e.summary as Json).changes)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ authMethod: 'private_key_jwt', jwks: [{ kid: 'ed-1', kty: 'OKP', thumbprint: expect.any(String) }] }),
        expect.objectContaining({ jwks: null, jwksUri: 'https://93.184.215.14/keys' }),
        expect.objectContaining({ authMethod: 'client_secret_basic', jwksUri: null }),
      ]),
    );
  });

  it('one holding permissions beyond the caller cannot be changed, enabled or rotated by them (403), but may be disabled', async () => {
    const org = await seedOrganization(server.services.db);
    const platform = await seedSignedIn(server.services.db, { platformAdmin: true });
    const { application } = (await createMachine(platform, org, { permissions: [NOT_HELD, 'invoices.read'] })).body;
    const admin = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_admin' });
    const as = (method: string, suffix: string, body: unknown) =>
      call(method, `/v1/applications/${application.id}${suffix}`, { cookie: admin.cookie, body });
    for (const res of [
      await as('PATCH', '', { name: 'Renamed' }),
      await as('PATCH', '', { permissions: ['invoices.read'] }),
      await as('PATCH', '', { tokenEndpointAuthMethod: 'private_key_jwt', jwks: { keys: [rsa] } }),
      await as('POST', '/rotate-secret', {}),
    ]) {
      expect(res.status, res.text).toBe(403);
      expect(res.body.error.message).toContain(NOT_HELD);
    }
    const disabled = await as('POST', '/status', { status: 'disabled' });
    expect(disabled.status, disabled.text).toBe(200);
    const enabled = await as('POST', '/status', { status: 'active' });
    expect(enabled.status, enabled.text).toBe(403);
    const [row] = await applicationsOf(org.id);
    expect(row).toMatchObject({ name: 'Billing job', status: 'disabled', machinePermissions: [NOT_HELD, 'invoices.read'].sort() });
  });

  it('a permission no API resource declares any more grants nothing, so it does not put the client above its admin', async () => {
    const { org, admin } = await adminOfNewOrg();
    await seedApiResource(server.services.db, { permissions: ['legacy.sync'] });
    const platform = await seedSignedIn(server.services.db, { platformAdmin: true });
    const { application } = (await createMachine(platform, org, { permissions: ['invoices.read', 'legacy.sync'] })).body;
    const rename = () => call('PATCH', `/v1/applications/${application.id}`, { cookie: admin.cookie, body: { name: 'Renamed' } });
    expect((await rename()).status).toBe(403);
    await server.services.db.delete(apiPermissions).where(eq(apiPermissions.name, 'legacy.sync'));
    const renamed = await rename();
    expect(renamed.status, renamed.text).toBe(200);
  });

  it('disable, enable and rotate: audited; a disabled machine client is no client of the OpenID Provider, and a rotated secret replaces the old', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application, secretKey } = (await createMachine(admin, org, { permissions: ['invoices.read'] })).body;
    const clients = applicationClients(server.services.applications, { keylessEnabled: false, tryCallbackUrl: 'https://svc.test/try' });
    expect(await clients.find(application.id)).toMatchObject({ grant_types: ['client_credentials'], client_id: application.id });

    expect(
      (await call('POST', `/v1/applications/${application.id}/status`, { cookie: admin.cookie, body: { status: 'disabled' } })).status,
    ).toBe(200);
    expect(await clients.find(application.id)).toBeUndefined();
    expect(
      (await call('POST', `/v1/applications/${application.id}/status`, { cookie: admin.cookie, body: { status: 'active' } })).status,
    ).toBe(200);
    expect(await clients.find(application.id)).toBeDefined();

    const before = (await clients.find(application.id))?.client_secret;
    const rotated = await call('POST', `/v1/applications/${application.id}/rotate-secret`, { cookie: admin.cookie, body: {} });
    expect(rotated.status, rotated.text).toBe(200);
    expect((await call('GET', '/v1/backend/application', { authorization: `Bearer ${secretKey}` })).status).toBe(401);
    // The client secret is the new key's hash from the commit on (the cache was dropped).
    const after = (await clients.find(application.id))?.client_secret;
    expect(after).not.toBe(before);
    expect(after).toBe((await applicationsOf(org.id))[0]?.secretKeyHash);

    expect((await auditOf(org.id, 'application.updated')).map((e) => (e.summary as Json).changes.status)).toEqual(['disabled', 'active']);
    expect(await auditOf(org.id, 'application.secret_rotated')).toHaveLength(1);
  });
});

describe('GET /v1/product-permissions', () => {
  it("lists the product's permissions with their API resource, by identifier then name, for anyone who reads applications", async () => {
    const { org, admin } = await adminOfNewOrg();
    const res = await call('GET', `/v1/product-permissions?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(res.status, res.text).toBe(200);
    expect(res.body.nextCursor).toBeNull();
    expect(res.body.data.map((p: Json) => `${p.resource.identifier} ${p.name}`)).toEqual([
      'https://api.invoices.example invoices.create',
      'https://api.invoices.example invoices.read',
      'https://api.reports.example reports.export',
      'https://api.reports.example reports.read',
    ]);
    expect(res.body.data[0]).toEqual({
      name: 'invoices.create',
      description: 'may invoices.create',
      resource: { identifier: 'https://api.invoices.example', name: 'Invoices' },
    });
    // A platform admin reads it from the platform workspace too.
    const platform = await seedSignedIn(server.services.db, { platformAdmin: true });
    expect((await call('GET', '/v1/product-permissions', { cookie: platform.cookie })).status).toBe(200);
  });
});

describe('svc apps create --client-type machine', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'svc-machine-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const svc = (...args: string[]) => runCli(['apps', 'create', '--org', 'cli-machines', ...args], { DATABASE_URL: server.databaseUrl });

  // Each run is a process of its own (tsx, migrations): four of them.
  it('creates a machine client with permissions and keys from a file; unknown permissions, private keys and sign-in settings are refused', {
    timeout: 180_000,
  }, async () => {
    const file = path.join(dir, 'jwks.json');
    writeFileSync(file, JSON.stringify({ keys: [ec256] }));
    const ok = await svc(
      '--name',
      'Nightly',
      '--client-type',
      'machine',
      '--permission',
      'reports.export',
      '--permission',
      'invoices.read',
      '--auth-method',
      'private_key_jwt',
      '--jwks-file',
      file,
      '--json',
    );
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    const out = JSON.parse(ok.stdout) as Json;
    expect(out.application).toMatchObject({
      clientType: 'machine',
      tokenEndpointAuthMethod: 'private_key_jwt',
      jwksKeys: 1,
      permissions: ['invoices.read', 'reports.export'],
    });
    expect(out.secretKey).toMatch(/^sk_live_/);

    const unknown = await svc('--name', 'Nope', '--client-type', 'machine', '--permission', 'invoices.delete');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('invoices.delete');

    const privateFile = path.join(dir, 'private.json');
    writeFileSync(privateFile, JSON.stringify({ keys: [generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' })] }));
    const leaked = await svc('--name', 'Nope', '--client-type', 'machine', '--auth-method', 'private_key_jwt', '--jwks-file', privateFile);
    expect(leaked.code).toBe(1);
    expect(leaked.stderr).toContain('private key material');

    const mismatch = await svc('--name', 'Nope', '--permission', 'invoices.read');
    expect(mismatch.code).toBe(1);
    expect(mismatch.stderr).toContain('only machine clients');
  });
});

describe('seeded machine clients', () => {
  it('the factory makes one through the same rules', async () => {
    const created = await seedApplication(server.services.db, { clientType: 'machine', permissions: ['invoices.read'] });
    expect(created.application).toMatchObject({ clientType: 'machine', machinePermissions: ['invoices.read'], redirectUrls: [] });
    await expect(seedApplication(server.services.db, { clientType: 'machine', redirectUrls: ['https://x.example/cb'] })).rejects.toThrow(
      /machine client has no redirectUrls/,
    );
  });
});

import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makeKeyPair } from '../apps/api/src/modules/sso/saml-idp.fixtures.ts';
import { NAV_ITEMS } from '../apps/console/src/layout/nav-items.ts';
import { createTestDatabase } from '../test/support/db.ts';
import { type SmtpCapture, startSmtpCapture } from '../test/support/mail.ts';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import {
  checkPage,
  failures,
  nextFrames,
  PAGES_ARTIFACTS_DIR,
  type PageResult,
  trackRequests,
  VIEWPORTS,
  writeFindings,
} from './support/page-checks.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_ADMIN, DEMO_USER, signInAt } from './support/sign-in.ts';

type Json = Record<string, any>;
type Answer = { status: number; body: Json };

const CONSOLE = '/auth/console';

/** What the seeding made, for the pages' addresses. */
type Seeded = {
  organization: { id: string; slug: string };
  application: { id: string; publishableKey: string; redirectUrl: string };
  /** An API resource of the product's catalog (docs/authorization.md). */
  resourceId: string;
  endpointId: string;
  /** A user the tenant admin added (Priya, invited). */
  userId: string;
  deliveryId: string;
  claimUrl: string;
  /** The live ingest key, a pending invitation and the tenant admin's own session: their pages. */
  apiKeyId: string;
  invitationId: string;
  sessionId: string;
};

/**
 * A console page: every route of app.tsx (the nav's items, by the nav's own list), the detail
 * views that have an address of their own, and the not-found view of an unknown path.
 */
type ConsolePage = { name: string; path: (seeded: Seeded) => string; platformOnly: boolean };
const CONSOLE_PAGES: ConsolePage[] = [
  ...NAV_ITEMS.map((item) => ({
    name: item.id,
    // People's nav link opens its first tab (a redirect): checked at the tab's own address.
    path: () => (item.id === 'people' ? '/people/members' : item.path),
    platformOnly: 'platformOnly' in item && item.platformOnly,
  })),
  { name: 'people-invitations', path: () => '/people/invitations', platformOnly: false },
  { name: 'invitation-detail', path: (s) => `/people/invitations/${s.invitationId}`, platformOnly: false },
  { name: 'api-key-detail', path: (s) => `/api-keys/${s.apiKeyId}`, platformOnly: false },
  { name: 'session-detail', path: (s) => `/sessions/${s.sessionId}`, platformOnly: false },
  { name: 'product-role-detail', path: () => '/authorization/product-roles/warehouse_supervisor', platformOnly: false },
  { name: 'application-detail', path: (s) => `/applications/${s.application.id}`, platformOnly: false },
  { name: 'webhook-endpoint-detail', path: (s) => `/webhooks/${s.endpointId}`, platformOnly: false },
  { name: 'role-detail', path: () => '/roles/billing_analyst', platformOnly: false },
  { name: 'user-detail', path: (s) => `/users/${s.userId}`, platformOnly: false },
  { name: 'organization-detail', path: (s) => `/organizations/${s.organization.id}`, platformOnly: true },
  { name: 'api-resource-detail', path: (s) => `/authorization/resources/${s.resourceId}`, platformOnly: false },
  { name: 'webhook-delivery-detail', path: (s) => `/webhook-deliveries?delivery=${s.deliveryId}`, platformOnly: false },
  { name: 'not-found', path: () => '/no-such-page', platformOnly: false },
];

/** A hosted page of svc (plain HTML from apps/api), and how a signed-in person gets there. */
type HostedPage = { name: string; open: (page: Page, seeded: Seeded) => Promise<void> };

/** An authorization request of the seeded application, as an application's sign-in sends it. */
function authorizeUrl(seeded: Seeded, params: Record<string, string>): string {
  const verifier = randomBytes(32).toString('base64url');
  return `/oidc/auth?${new URLSearchParams({
    client_id: seeded.application.id,
    response_type: 'code',
    redirect_uri: seeded.application.redirectUrl,
    scope: 'openid email profile organization',
    state: randomBytes(8).toString('hex'),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    ...params,
  })}`;
}

const atInteraction = (url: URL) => url.pathname.startsWith('/oidc/interaction/');

/** Opens `url` and checks the page answered there (a redirect to sign-in would check the wrong page). */
async function visit(page: Page, url: string): Promise<void> {
  await page.goto(url);
  expect(new URL(page.url()).pathname).toBe(new URL(url, 'http://svc.invalid').pathname);
}

const HOSTED_PAGES: HostedPage[] = [
  { name: 'landing', open: (page) => visit(page, '/') },
  {
    name: 'sign-in',
    open: (page, s) =>
      visit(page, `/signin?publishable_key=${s.application.publishableKey}&return_to=${encodeURIComponent(s.application.redirectUrl)}`),
  },
  { name: 'sign-up', open: (page, s) => visit(page, `/signup?publishable_key=${s.application.publishableKey}`) },
  {
    // The application asks for a fresh sign-in (prompt=login): svc's sign-in page on the interaction.
    name: 'oidc-interaction-sign-in',
    open: async (page, s) => {
      await page.goto(authorizeUrl(s, { prompt: 'login' }));
      await page.waitForURL(atInteraction);
      await page.getByTestId('continue-email').waitFor();
    },
  },
  {
    // The console's try sign-in asks for `organization`; someone in two organizations picks one.
    name: 'organization-picker',
    open: async (page, s) => {
      await page.goto(`/oidc/try/${s.application.id}`);
      await page.waitForURL(atInteraction);
      await page.getByTestId('pick-organization').first().waitFor();
    },
  },
  {
    name: 'try-sign-in-result',
    open: async (page, s) => {
      await page.goto(`/oidc/try/${s.application.id}`);
      await page.waitForURL(atInteraction);
      await page.locator(`[data-testid="pick-organization"][data-slug="${s.organization.slug}"]`).click();
      await page.getByTestId('try-heading').waitFor();
    },
  },
  {
    // A redirect_uri the application never registered: nothing to send the error to, svc's page says it.
    name: 'oidc-error',
    open: (page, s) => visit(page, authorizeUrl(s, { redirect_uri: 'https://unregistered.example.net/callback' })),
  },
  { name: 'sign-in-error', open: (page) => visit(page, '/auth/callback?state=stale&code=stale') },
  { name: 'account', open: (page) => visit(page, '/user') },
  { name: 'sign-out', open: (page) => visit(page, '/auth/logout') },
  { name: 'keyless-claim', open: (page, s) => visit(page, s.claimUrl) },
  // An unknown address typed into the browser: svc's 404 page, not the API's JSON.
  { name: 'not-found', open: (page) => visit(page, '/no-such-page') },
];

/**
 * Webhook receiver on loopback: paths under /ok answer 200, anything else 503 (a receiver that is
 * down), so the deliveries list has both outcomes.
 */
async function startReceiver(): Promise<{ url: (path: string) => string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const ok = (req.url ?? '').startsWith('/ok/');
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok' : 'down for maintenance');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type Who = {
  id: 'tenant-admin' | 'platform-admin';
  page: Page;
  context: BrowserContext;
  requests: { inFlight: () => number };
  pageErrors: string[];
};

/**
 * Every console page and every hosted page, as a tenant admin and as a platform admin, at 1440 and
 * 390 px wide, light and dark, and the console's dialogs, menus and command palette open, on
 * realistic data: no serious or critical axe-core violation, no page wider than a phone's screen, no table cell whose
 * content spills out of it, no identifier (`data-identifier`) broken over two lines. Screenshots of
 * each land in e2e/artifacts/pages/, and every finding in e2e/artifacts/pages/findings.json.
 */
describeInChromium('e2e: console and hosted pages pass the page checks', () => {
  let server: E2EServer;
  let databaseUrl: string;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let smtp: SmtpCapture;
  let browser: Browser;
  let seeded: Seeded;
  const who = {} as Record<Who['id'], Who>;
  const results: PageResult[] = [];
  const timings: Record<string, number> = {};
  let started = 0;

  async function signedIn(id: Who['id'], credentials: { email: string; password: string }): Promise<Who> {
    // bypassCSP: axe-core goes in as an inline script, which svc's CSP (rightly) refuses.
    const context = await browser.newContext({ baseURL: server.url, viewport: VIEWPORTS[0], bypassCSP: true });
    context.setDefaultTimeout(20_000);
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
    await signInAt(page, server.url, `${CONSOLE}/`, credentials);
    return { id, page, context, requests: trackRequests(page), pageErrors };
  }

  /** A call with the browser's own session (same origin, JSON), as the console makes it. */
  function api(page: Page, method: string, path: string, body?: unknown): Promise<Answer> {
    return page.evaluate(
      async ({ method, path, body }) => {
        const res = await fetch(path, {
          method,
          headers: body === undefined ? {} : { 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: res.status, body: await res.json() };
      },
      { method, path, body },
    );
  }

  /** `api`, expecting `status`: the seed is the test's ground, a refused step stops it here. */
  async function must(page: Page, status: number, method: string, path: string, body?: unknown): Promise<Json> {
    const answer = await api(page, method, path, body);
    expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(status);
    return answer.body;
  }

  /** Polls `probe` until it returns true (the worker's jobs: exports, deliveries). */
  async function eventually(what: string, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await probe())) {
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${what}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  /**
   * Realistic data through the real API, so that no list is empty and the values have real
   * lengths: the tenant admin's organization (renamed) and a second one, two applications, API
   * keys (one revoked), two webhook endpoints (one receiver down) and their deliveries, the
   * product's catalog (two APIs, the built-in rows' permissions, a product role), a custom role
   * with permissions of both catalogs, two email domains (one auto-joining), a SCIM directory that provisioned a person and a group, a user added by email, invitations (pending, revoked, accepted), usage events of two
   * types (1,200 against 3) sent with a tenant API key, billing connected and mapped, two exports.
   * The platform admin joins both organizations (so the organization picker shows for them too),
   * puts the first on a plan with usage limits and acts in it.
   */
  async function seed(tenant: Page, platform: Page): Promise<Seeded> {
    const me = await must(tenant, 200, 'GET', '/v1/me');
    const organization = { id: me.activeWorkspace.id as string, slug: me.activeWorkspace.slug as string };
    const slug = organization.slug;
    await must(tenant, 200, 'PATCH', `/v1/tenants/${organization.id}`, { name: 'Northwind Traders' });
    const second = await must(tenant, 201, 'POST', '/v1/tenants', { name: 'Northwind Traders – EU Operations (Frankfurt)' });
    const secondSlug = (second.tenant?.slug ?? second.slug) as string;
    // A person's grant to an AI agent, as a consent stores it (oidc-provider's Grant): the
    // Third-party access page lists it. No route makes one but the consent page itself.
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const grant = {
        kind: 'Grant',
        accountId: me.user.id,
        clientId: 'https://agents.northwind-traders.example/assistants/order-desk/client-metadata.json',
        openid: { scope: 'openid email offline_access' },
        resources: { 'https://api.northwind-traders.example/orders': 'orders.read orders.export' },
        organization,
        iat: Math.floor(Date.now() / 1000),
      };
      await sql`insert into oidc_payloads (model, id, payload, expires_at)
        values ('Grant', 'pagecheck-grant-00000000000', ${JSON.stringify(grant)}::text::jsonb, now() + interval '14 days')`;
    } finally {
      await sql.end();
    }

    // Endpoints first: the events below are delivered to them.
    const eventTypes = [
      'invitation.created',
      'invitation.accepted',
      'role.created',
      'api_key.created',
      'api_key.revoked',
      'application.created',
    ];
    const crm = await must(tenant, 201, 'POST', '/v1/webhook-endpoints', {
      organization_slug: slug,
      url: receiver.url('/ok/northwind/identity-events/crm-sync?source=svc&region=eu-central-1'),
      eventTypes,
      description: 'Identity events for the CRM sync worker (Salesforce connector, production)',
    });
    await must(tenant, 201, 'POST', '/v1/webhook-endpoints', {
      organization_slug: slug,
      url: receiver.url('/down/staging/hooks/svc'),
      eventTypes: ['invitation.created', 'role.created'],
      description: 'Staging receiver',
    });

    const portal = await must(tenant, 201, 'POST', '/v1/applications', {
      organization_slug: slug,
      name: 'Customer Portal',
      redirectUrls: ['https://portal.northwind-traders.example/auth/callback', 'http://localhost:3000/auth/callback'],
      allowedOrigins: ['https://portal.northwind-traders.example', 'http://localhost:3000'],
      postLogoutRedirectUrls: ['https://portal.northwind-traders.example/'],
      clientType: 'confidential',
    });
    await must(tenant, 201, 'POST', '/v1/applications', {
      organization_slug: slug,
      name: 'Warehouse Scanner (iOS and Android)',
      redirectUrls: ['https://scanner.northwind-traders.example/oauth/callback'],
      clientType: 'public',
      signInAudience: 'members',
    });

    // The product's catalog, which the platform declares: two APIs, the built-in org_admin holding
    // most of it (so the tenant admin may grant it), and a product role of the platform's own.
    const orders = await must(platform, 201, 'POST', '/v1/api-resources', {
      identifier: 'https://api.northwind-traders.example/orders/v2',
      name: 'Orders and fulfilment API (v2)',
      description: 'Orders, shipments and returns of the customer portal and the warehouse scanners.',
      permissions: [
        { name: 'orders.read', description: 'List and read orders with their lines' },
        { name: 'orders.create', description: 'Place orders on behalf of a customer' },
        { name: 'orders.cancel', description: 'Cancel an order before it ships' },
        { name: 'shipments.dispatch', description: 'Mark a shipment as handed to the carrier' },
        { name: 'returns:approve', description: 'Approve a return and issue the credit note' },
      ],
    });
    await must(platform, 201, 'POST', '/v1/api-resources', {
      identifier: 'https://reports.northwind-traders.example',
      name: 'Reports',
      permissions: [{ name: 'reports.export', description: 'Export monthly reports as CSV' }],
    });
    await must(platform, 200, 'PATCH', '/v1/product-roles/prl_org_admin', {
      permissions: ['orders.read', 'orders.create', 'orders.cancel', 'reports.export'],
    });
    await must(platform, 200, 'PATCH', '/v1/product-roles/prl_org_member', { permissions: ['orders.read'] });
    await must(platform, 201, 'POST', '/v1/product-roles', {
      key: 'warehouse_supervisor',
      name: 'Warehouse supervisor',
      description: 'Dispatches shipments and approves returns at the Frankfurt warehouse',
      permissions: ['orders.read', 'shipments.dispatch', 'returns:approve'],
    });

    await must(tenant, 201, 'POST', '/v1/roles', {
      organization_slug: slug,
      key: 'billing_analyst',
      name: 'Billing analyst',
      permissions: ['billing.read', 'usage.read', 'subscription.read', 'exports.create', 'audit.read'],
      productPermissions: ['orders.read', 'reports.export'],
    });
    // Email domains (pending: this server asks no DNS of the test's), one auto-joining as the custom role.
    const domain = await must(tenant, 201, 'POST', '/v1/domains', { organization_slug: slug, domain: 'Northwind-Traders.example' });
    await must(tenant, 200, 'PATCH', `/v1/domains/${domain.id}`, { policy: 'auto_join', autoJoinRoleKey: 'billing_analyst' });
    await must(tenant, 201, 'POST', '/v1/domains', {
      organization_slug: slug,
      domain: 'identity.eu-central-1.northwind-logistics.example',
    });
    // A SCIM directory with a group mapped to the custom role, which has provisioned a person and
    // a group over SCIM (so its counts and request log are not empty).
    const directory = await must(tenant, 201, 'POST', '/v1/directories', {
      organization_slug: slug,
      name: 'Okta – Northwind production tenant',
      groupRoles: [{ group: 'Finance & Billing Analysts (EMEA)', roleKey: 'billing_analyst' }],
    });
    const scim = async (method: string, path: string, body: unknown) => {
      const res = await fetch(`${directory.scimBaseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${directory.token}`, 'content-type': 'application/scim+json' },
        body: JSON.stringify(body),
      });
      expect(res.status, await res.clone().text()).toBe(201);
      return (await res.json()) as Json;
    };
    const provisioned = await scim('POST', '/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: 'henrike.vandermeulen-oyelaran@northwind-traders.example',
      name: { givenName: 'Henrike', familyName: 'van der Meulen-Oyelaran' },
      externalId: '00u1ab2cd3EF4gh5IJ6k7',
      active: true,
    });
    await scim('POST', '/Groups', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
      displayName: 'Finance & Billing Analysts (EMEA)',
      members: [{ value: provisioned.id }],
    });
    // An SSO connection (SAML, its IdP by hand): the SSO connections page shows the URLs to copy.
    await must(tenant, 201, 'POST', '/v1/sso-connections', {
      organization_slug: slug,
      protocol: 'saml',
      name: 'Northwind Okta',
      saml: {
        entityId: 'http://www.okta.com/exk1northwind',
        ssoUrl: 'https://northwind.okta.example/app/sso/saml',
        certificates: [makeKeyPair('northwind-okta').cert],
      },
    });
    // Setup links for the customer's IT admin: one waiting to be opened (a long label), one revoked.
    await must(tenant, 201, 'POST', '/v1/setup-links', {
      organization_slug: slug,
      purpose: 'sso',
      label: 'Northwind IT – identity team (Okta and Entra ID migration)',
      expiresInHours: 8,
    });
    const revokedLink = await must(tenant, 201, 'POST', '/v1/setup-links', { organization_slug: slug, purpose: 'directory' });
    await must(tenant, 200, 'POST', `/v1/setup-links/${revokedLink.id}/revoke`, {});
    const priya = await must(tenant, 201, 'POST', '/v1/users', {
      organization_slug: slug,
      email: 'priya.raghunathan@northwind-traders.example',
      name: 'Priya Raghunathan',
      roleKey: 'billing_analyst',
    });

    const ingest = await must(tenant, 201, 'POST', `/v1/tenants/${organization.id}/api-keys`, {
      name: 'Usage ingest – production',
      scopes: ['usage.write', 'usage.read'],
      // "in 11 months": the longest relative expiry, which the Expires column must show whole.
      expiresAt: new Date(Date.now() + 330 * 86_400_000).toISOString(),
    });
    await must(tenant, 201, 'POST', `/v1/tenants/${organization.id}/api-keys`, {
      name: 'Nightly billing reconciliation',
      scopes: ['billing.read', 'usage.read', 'subscription.read', 'exports.create'],
      expiresAt: new Date(Date.now() + 90 * 86_400_000).toISOString(),
    });
    const old = await must(tenant, 201, 'POST', `/v1/tenants/${organization.id}/api-keys`, {
      name: 'Old CI deploy key',
      scopes: ['applications.read'],
    });
    await must(tenant, 200, 'POST', `/v1/api-keys/${old.apiKey.id}/revoke`, {});

    const pending = await must(tenant, 201, 'POST', '/v1/invitations', {
      organization_slug: slug,
      email: 'alexandra.konstantinopoulou@northwind-traders.example',
      roleKey: 'org_member',
    });
    const revoked = await must(tenant, 201, 'POST', '/v1/invitations', {
      organization_slug: slug,
      email: 'jordan.lee@contractor.example',
      roleKey: 'billing_analyst',
    });
    await must(tenant, 200, 'POST', `/v1/invitations/${revoked.invitation.id}/revoke`, { organization_slug: slug });
    const invited = [
      await must(tenant, 201, 'POST', '/v1/invitations', { organization_slug: slug, email: DEMO_ADMIN.email, roleKey: 'org_admin' }),
      await must(tenant, 201, 'POST', '/v1/invitations', { organization_slug: secondSlug, email: DEMO_ADMIN.email, roleKey: 'org_admin' }),
    ];
    for (const invitation of invited) {
      await must(platform, 200, 'POST', '/v1/invitations/accept', { token: invitation.invitationToken });
    }

    await must(tenant, 200, 'POST', '/v1/billing/connect/stripe', {
      organization_slug: slug,
      externalAccountId: 'acct_1NvXq2LkdIwHu7ix',
      mode: 'sandbox',
    });
    await must(tenant, 201, 'POST', '/v1/billing/mappings', {
      organization_slug: slug,
      provider: 'stripe',
      eventType: 'api.request',
      providerItemId: 'price_1OpQrStUvWxYz0123456789',
    });

    // Usage with the tenant API key, as a backend sends it: two types of very different counts,
    // spread over the last two weeks.
    const now = Date.now();
    const events = [
      ...Array.from({ length: 1200 }, (_, i) => ({
        idempotencyKey: `req-${String(i).padStart(5, '0')}`,
        eventType: 'api.request',
        quantity: 1 + (i % 7),
        occurredAt: new Date(now - (i % 14) * 86_400_000 - i * 1000).toISOString(),
        properties: { route: i % 2 ? '/v1/orders' : '/v1/customers', region: 'eu-central-1' },
      })),
      ...Array.from({ length: 3 }, (_, i) => ({
        idempotencyKey: `seat-sync-${i}`,
        eventType: 'seat.sync',
        occurredAt: new Date(now - i * 3_600_000).toISOString(),
      })),
    ];
    for (let i = 0; i < events.length; i += 1000) {
      const res = await fetch(`${server.url}/v1/usage/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ingest.secretKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ events: events.slice(i, i + 1000) }),
      });
      expect(res.status, await res.clone().text()).toBe(200);
    }

    await must(tenant, 202, 'POST', `/v1/webhook-endpoints/${crm.endpoint.id}/test`, { organization_slug: slug });
    await must(tenant, 202, 'POST', '/v1/export/all', { organization_slug: slug, format: 'csv' });
    await must(tenant, 202, 'POST', '/v1/export/all', { organization_slug: slug, format: 'json' });

    // The platform admin: a plan with usage limits for the organization, then acts in it.
    await must(platform, 201, 'POST', '/v1/subscription-plans', {
      key: 'growth',
      name: 'Growth (annual)',
      seatLimit: 25,
      usageLimits: { 'api.request': 5000, 'seat.sync': 100 },
    });
    await must(platform, 200, 'PATCH', `/v1/subscription?organization_slug=${slug}`, { planKey: 'growth' });
    await must(platform, 200, 'POST', '/v1/me/workspace', { organization_slug: slug });

    const keyless = await (await fetch(`${server.url}/v1/client/config?keyless=1`)).json();
    const sessions = await must(tenant, 200, 'GET', `/v1/sessions?organization_slug=${slug}`);
    const ownSession = sessions.data.find((session: Json) => session.current);
    expect(ownSession).toBeDefined();

    // The worker's part: exports written, every delivery attempted at least once.
    await eventually('both exports to complete', async () => {
      const list = await must(tenant, 200, 'GET', `/v1/exports?organization_slug=${slug}`);
      return list.data.length === 2 && list.data.every((e: Json) => e.status === 'completed');
    });
    let deliveryId = '';
    await eventually('every webhook delivery to be attempted', async () => {
      const list = await must(tenant, 200, 'GET', `/v1/webhook-deliveries?organization_slug=${slug}&limit=200`);
      deliveryId = list.data.find((d: Json) => d.status === 'succeeded')?.id ?? '';
      return list.data.length > 0 && list.data.every((d: Json) => d.status !== 'pending') && deliveryId !== '';
    });

    return {
      organization,
      application: {
        id: portal.application.id,
        publishableKey: portal.application.publishableKey,
        redirectUrl: 'https://portal.northwind-traders.example/auth/callback',
      },
      resourceId: orders.id,
      endpointId: crm.endpoint.id,
      userId: priya.id,
      deliveryId,
      claimUrl: keyless.claimUrl,
      apiKeyId: ingest.apiKey.id,
      invitationId: pending.invitation.id,
      sessionId: ownSession.id,
    };
  }

  beforeAll(async () => {
    started = Date.now();
    mkdirSync(PAGES_ARTIFACTS_DIR, { recursive: true });
    receiver = await startReceiver();
    smtp = await startSmtpCapture();
    databaseUrl = await createTestDatabase();
    server = await startServer({
      databaseUrl,
      env: {
        // The webhook receiver is on loopback.
        WEBHOOK_ALLOW_PRIVATE: 'true',
        // Invitations are emailed (to a real SMTP server in this process): the deliveries list fills.
        EMAIL_ENABLED: 'true',
        EMAIL_PROVIDER: 'smtp',
        SMTP_URL: smtp.url,
        EMAIL_FROM: 'Northwind Traders via svc <invites@northwind-traders.example>',
      },
    });
    browser = await launchChromium();
    who['tenant-admin'] = await signedIn('tenant-admin', DEMO_USER);
    who['platform-admin'] = await signedIn('platform-admin', DEMO_ADMIN);
    timings.startMs = Date.now() - started;
    seeded = await seed(who['tenant-admin'].page, who['platform-admin'].page);
    // Both consoles read `me` at sign-in: the platform admin acts in the workspace the seed switched
    // it to, and the tenant admin's switcher lists the organization the seed made, whichever of
    // their pages a run checks first.
    for (const w of Object.values(who)) {
      await w.page.goto(`${CONSOLE}/`);
      await w.page.getByTestId('console-shell').waitFor({ state: 'visible' });
    }
    timings.seedMs = Date.now() - started - timings.startMs;
  }, 240_000);

  afterAll(async () => {
    timings.totalMs = Date.now() - started;
    const file = writeFindings(results, { timings, viewports: VIEWPORTS });
    console.info(`page checks: ${results.length} page views in ${Math.round(timings.totalMs / 1000)} s; findings in ${file}`);
    for (const w of Object.values(who)) {
      await w.context.close();
    }
    await browser?.close();
    await server?.stop();
    await receiver?.close();
    await smtp?.close();
  });

  /**
   * Opens a console page. Inside the console already, the way it moves itself (a history entry
   * React Router follows), so the bundle and axe-core are not loaded again for every page.
   */
  async function openConsole(w: Who, path: string): Promise<void> {
    const url = `${CONSOLE}${path}`;
    const inShell = await w.page.evaluate(() => document.querySelector('[data-testid="console-shell"]') !== null);
    if (!inShell) {
      await w.page.goto(url);
      return;
    }
    await w.page.evaluate((to) => {
      window.history.pushState(null, '', to);
      window.dispatchEvent(new PopStateEvent('popstate'));
    }, url);
    await nextFrames(w.page);
    expect(new URL(w.page.url()).pathname + new URL(w.page.url()).search).toBe(url);
  }

  /**
   * Checks the page `w` is on, at both widths; fails with every finding, one per line. A list that
   * shows its empty state fails it too: the seed fills every list, so the checks see real rows.
   */
  async function expectPagePasses(w: Who, name: string): Promise<void> {
    const checked = await checkPage(w.page, { who: w.id, name, requests: w.requests, pageErrors: w.pageErrors });
    results.push(...checked);
    const empty = await w.page.evaluate(() =>
      [...document.querySelectorAll('[data-testid$="-empty"]')]
        .filter((el) => el.getClientRects().length > 0)
        .map((el) => el.getAttribute('data-testid')),
    );
    const gaps = empty.map((testId) => `${w.id} ${name}: ${testId} is showing: a gap in the seed`);
    expect([...gaps, ...failures(checked)]).toEqual([]);
  }

  it('the checks find what they look for: low contrast, a cell overflowing, a pill cut off in its cell, a chip cut, an identifier on two lines, a heading and a short value cut on a wide screen, a long one cut without a tooltip', async () => {
    const context = await browser.newContext({ viewport: VIEWPORTS[0], bypassCSP: true });
    try {
      const page = await context.newPage();
      const requests = trackRequests(page);
      await page.setContent(`<!doctype html><html lang="en"><head><title>fixture</title></head><body><main>
<h1>Fixture</h1>
<p style="color:#c4c4c4;background:#fff">Text too pale to read</p>
<table style="table-layout:fixed;width:220px"><thead><tr><th>Id</th></tr></thead><tbody>
<tr><td>app_0123456789abcdefghijABCDEFGHIJ</td></tr>
<tr><td style="overflow-x:auto" tabindex="0">app_0123456789abcdefghijABCDEFGHIJ</td></tr>
</tbody></table>
<table style="table-layout:fixed;width:120px"><thead><tr><th>Status</th></tr></thead><tbody>
<tr><td><div style="overflow:hidden"><span style="display:inline-block;padding:0 12px;white-space:nowrap">succeeded and retried</span></div></td></tr>
<tr><td><div style="overflow:hidden;text-overflow:ellipsis;white-space:nowrap">an ellipsized description that is cut</div></td></tr>
</tbody></table>
<div style="width:90px"><code data-identifier style="word-break:break-all">usr_0123456789abcdefghij</code></div>
<div style="width:300px"><code data-identifier>usr_01234</code></div>
<div class="chips" style="display:flex;gap:4px;width:120px;overflow:hidden"><code style="flex:0 1 auto;min-width:0;overflow:hidden;white-space:nowrap;text-overflow:ellipsis">subscription.manage</code><code style="flex:none">usage.read</code></div>
<div class="chips" style="display:flex;width:60px;overflow:hidden"><code style="flex:0 1 auto;min-width:0;overflow:hidden;white-space:nowrap;text-overflow:ellipsis">subscription.manage</code></div>
<table class="data-table data-table--fixed" style="table-layout:fixed;width:120px"><thead><tr><th style="overflow:hidden;white-space:nowrap;text-overflow:ellipsis">Last sign-in of the person</th></tr></thead><tbody>
<tr><td><div class="data-table__cell" style="overflow:hidden;white-space:nowrap;text-overflow:ellipsis;width:40px">in 7 months</div></td></tr>
<tr><td><div class="data-table__cell" style="overflow:hidden;white-space:nowrap;text-overflow:ellipsis;width:40px">alexandra.konstantinopoulou@northwind-traders.example</div></td></tr>
<tr><td><div class="data-table__cell" style="overflow:hidden;white-space:nowrap;text-overflow:ellipsis;width:40px" title="jordan.lee.contractor@northwind-traders.example">jordan.lee.contractor@northwind-traders.example</div></td></tr>
</tbody></table>
</main></body></html>`);
      const lines = failures(await checkPage(page, { who: 'fixture', name: 'checks', requests, pageErrors: [] }));
      const of = (text: string) => lines.filter((line) => line.includes(text));
      // At each width in light and again in dark (the fixture's colours are its own in both).
      expect(of('axe color-contrast (serious)'), lines.join('\n')).toHaveLength(2 * VIEWPORTS.length);
      expect(of('dark: axe color-contrast'), lines.join('\n')).toHaveLength(VIEWPORTS.length);
      // The first cell of each table: the Id table's second cell scrolls on purpose, and the
      // Status table's second cell ends in an ellipsis; its first cuts a pill's box off.
      // (and the chip cut beside another, below).
      expect(of('cell overflows'), lines.join('\n')).toHaveLength(3 * VIEWPORTS.length + 3);
      expect(of('row 1 col 1 "Id"'), lines.join('\n')).toHaveLength(VIEWPORTS.length);
      expect(of('row 1 col 1 "Status" span'), lines.join('\n')).toHaveLength(VIEWPORTS.length);
      expect(of('identifier wraps'), lines.join('\n')).toHaveLength(VIEWPORTS.length);
      expect(of('identifier wraps').every((line) => line.includes('usr_0123456789abcdefghij'))).toBe(true);
      // A chip cut beside another is found; the one chip of a cell too narrow for it is not.
      expect(of('chip cut'), lines.join('\n')).toHaveLength(VIEWPORTS.length);
      // On the wide screen only: a cut heading and a short value cut ("in 7 months").
      expect(of('heading cut'), lines.join('\n')).toEqual([expect.stringContaining('@1440')]);
      expect(of('short value cut'), lines.join('\n')).toEqual([expect.stringContaining('"in 7 months"')]);
      // A long email cut without its whole text on hover; the one with a title passes.
      expect(of('cut without a tooltip'), lines.join('\n')).toEqual([expect.stringContaining('alexandra.konstantinopoulou')]);
      expect(lines, lines.join('\n')).toHaveLength(6 * VIEWPORTS.length + 3);
    } finally {
      await context.close();
    }
  });

  /**
   * Every list whose rows have details: the first row's name (its action, on the audit log)
   * opens them at an address of their own, and the browser's back returns to the list.
   */
  const ROW_DETAILS: { list: string; name: string; detail: RegExp; platform?: boolean }[] = [
    { list: '/applications', name: '[data-testid="application-row-name"]', detail: /^\/applications\/app_\w+$/ },
    { list: '/people/members', name: '[data-testid="member-name"]', detail: /^\/users\/usr_\w+$/ },
    { list: '/people/invitations', name: '[data-testid="invitation-email"] a', detail: /^\/people\/invitations\/inv_\w+$/ },
    { list: '/users', name: '[data-testid="user-name"]', detail: /^\/users\/usr_\w+$/ },
    { list: '/sessions', name: 'a[href*="/sessions/"]', detail: /^\/sessions\/ses_\w+$/ },
    { list: '/roles', name: '[data-testid="role-name"]', detail: /^\/roles\/[\w-]+$/ },
    { list: '/api-keys', name: '[data-testid="api-key-name"]', detail: /^\/api-keys\/key_\w+$/ },
    { list: '/webhooks', name: '[data-testid="webhook-name"]', detail: /^\/webhooks\/wh_\w+$/ },
    { list: '/webhook-deliveries', name: '[data-testid="delivery-open"]', detail: /^\/webhook-deliveries\?delivery=whd_\w+$/ },
    { list: '/audit-log', name: '[data-testid="audit-log-open"]', detail: /^\/audit-log\?entry=aud_\w+$/ },
    { list: '/authorization/resources', name: '[data-testid="api-resource-link"]', detail: /^\/authorization\/resources\/res_\w+$/ },
    { list: '/authorization/product-roles', name: '[data-testid="product-role-name"]', detail: /^\/authorization\/product-roles\/[\w-]+$/ },
    { list: '/organizations', name: '[data-testid="organization-name"]', detail: /^\/organizations\/ten_\w+$/, platform: true },
  ];
  it("every list row with details opens them from its name, at the details' own address; back returns to the list", async () => {
    const opened: string[] = [];
    for (const entry of ROW_DETAILS) {
      const w = who[entry.platform ? 'platform-admin' : 'tenant-admin'];
      await openConsole(w, entry.list);
      const name = w.page.locator(`main tbody tr ${entry.name}`).first();
      await name.waitFor({ state: 'visible' });
      await name.click();
      const here = () => {
        const url = new URL(w.page.url());
        return url.pathname.slice(CONSOLE.length) + url.search;
      };
      await expect.poll(here, { message: `${entry.list}: the details' address` }).toMatch(entry.detail);
      // The details themselves: a page of their own (its heading) or a dialog over the list.
      await w.page.locator('main#content h1, [role="dialog"]').last().waitFor({ state: 'visible' });
      opened.push(entry.list);
      await w.page.goBack();
      await expect.poll(here, { message: `${entry.list}: back on the list` }).toBe(entry.list);
      await w.page.locator('[role="dialog"]').waitFor({ state: 'detached' });
    }
    expect(opened).toHaveLength(ROW_DETAILS.length);
    for (const w of Object.values(who)) {
      expect(w.pageErrors.splice(0)).toEqual([]);
    }
  });

  /**
   * A phone (390x844): every console page fits the screen (the document never scrolls sideways,
   * whatever its tables hold), the navigation is a menu that opens with every page in it, Sign out
   * is on screen, and a row's menu opens on screen even when its table scrolls sideways.
   */
  for (const id of ['tenant-admin', 'platform-admin'] as const) {
    it(`${id}: at 390x844 no console page is wider than the screen; menu, Sign out and row menus are on screen`, async () => {
      const w = who[id];
      const phone = VIEWPORTS[1];
      expect(phone).toEqual({ width: 390, height: 844 });
      // A desktop shows the navigation itself, and no Menu button.
      await openConsole(w, '/');
      await w.page.getByTestId('nav').waitFor({ state: 'visible' });
      expect(await w.page.getByTestId('nav-toggle').isVisible()).toBe(false);
      await w.page.setViewportSize(phone);
      try {
        const wide: string[] = [];
        for (const entry of CONSOLE_PAGES) {
          if (entry.platformOnly && id === 'tenant-admin') {
            continue;
          }
          await openConsole(w, entry.path(seeded));
          await w.page.locator('main#content h1').first().waitFor({ state: 'visible' });
          await w.page
            .locator('[data-testid$="-loading"]')
            .first()
            .waitFor({ state: 'detached' })
            .catch(() => undefined);
          await nextFrames(w.page);
          const scrollWidth = await w.page.evaluate(() => document.documentElement.scrollWidth);
          if (scrollWidth > phone.width) {
            // What sticks out: the outermost elements past the screen's right edge, for the message.
            const culprits = await w.page.evaluate((width) => {
              const out = [...document.querySelectorAll('body *')].filter((el) => el.getBoundingClientRect().right > width + 1);
              return out
                .filter((el) => !out.includes(el.parentElement as Element))
                .slice(0, 3)
                .map(
                  (el) =>
                    `${el.tagName.toLowerCase()}.${[...el.classList].join('.')}[${el.closest('[data-testid]')?.getAttribute('data-testid') ?? ''}]`,
                );
            }, phone.width);
            wide.push(`${entry.name}: ${scrollWidth} px (${culprits.join(', ')})`);
          }
        }
        expect(wide, 'pages wider than a 390 px screen').toEqual([]);

        // Sign out: whole, inside the screen.
        const signOut = await w.page.getByTestId('sign-out').boundingBox();
        expect(signOut).not.toBeNull();
        expect((signOut?.x ?? 0) + (signOut?.width ?? 0)).toBeLessThanOrEqual(phone.width);

        // The navigation: hidden until the header's Menu opens it, then every item; picking one closes it.
        const nav = w.page.getByTestId('nav');
        expect(await nav.isVisible()).toBe(false);
        await w.page.getByTestId('nav-toggle').click();
        await nav.waitFor({ state: 'visible' });
        expect(await w.page.getByTestId('nav-toggle').getAttribute('aria-expanded')).toBe('true');
        const items = NAV_ITEMS.filter((item) => id === 'platform-admin' || !('platformOnly' in item && item.platformOnly));
        for (const item of items) {
          expect(await nav.getByTestId(`nav-${item.id}`).isVisible(), item.id).toBe(true);
        }
        await nav.getByTestId('nav-applications').click();
        await nav.waitFor({ state: 'hidden' });
        expect(new URL(w.page.url()).pathname).toBe(`${CONSOLE}/applications`);

        // A row's "⋯" (the table scrolls sideways under it) and its menu are on screen.
        const trigger = w.page.getByTestId('application-row').first().getByTestId('application-actions');
        await trigger.waitFor({ state: 'visible' });
        const box = await trigger.boundingBox();
        expect((box?.x ?? 0) + (box?.width ?? 0)).toBeLessThanOrEqual(phone.width);
        await trigger.click();
        const menu = w.page.getByTestId('application-actions-menu');
        await menu.waitFor({ state: 'visible' });
        const menuBox = await menu.boundingBox();
        expect(menuBox?.x ?? -1).toBeGreaterThanOrEqual(0);
        expect((menuBox?.x ?? 0) + (menuBox?.width ?? 0)).toBeLessThanOrEqual(phone.width);
        await w.page.keyboard.press('Escape');
        await menu.waitFor({ state: 'hidden' });
        await saveScreenshot(w.page, `pages/${id}-phone-menu-390`);
        expect(w.pageErrors.splice(0)).toEqual([]);
      } finally {
        await w.page.setViewportSize(VIEWPORTS[0]);
      }
    });
  }

  /**
   * What opens over the page, open: every page's header buttons (create and edit dialogs), the
   * first row menu of every list, every select of a page (filters, a detail's role), the first
   * select inside a dialog (open over the dialog), the command palette and the workspace switcher,
   * each checked at both widths in both schemes like a page. A trigger is checked once per person
   * (the same dialog on the list and on a detail page is one), and the platform admin only where
   * the tenant admin has not opened the same: the run stays short.
   */
  const checkedOverlays = new Set<string>();
  let selectInDialogChecked = false;
  for (const id of ['tenant-admin', 'platform-admin'] as const) {
    it(`${id}: open dialogs, row menus, selects, the workspace switcher and the command palette pass the page checks`, async () => {
      const w = who[id];
      const findings: string[] = [];
      const overlays = w.page.locator('[role="dialog"], [role="menu"], [role="listbox"]');
      const check = async (name: string, trigger: string, nested = false) => {
        if (checkedOverlays.has(trigger)) {
          return;
        }
        checkedOverlays.add(trigger);
        const before = await overlays.count();
        await w.page.getByTestId(trigger).first().click();
        const overlay = overlays.nth(before);
        await overlay.waitFor({ state: 'visible' });
        const checked = await checkPage(w.page, { who: w.id, name: `${name}-${trigger}`, requests: w.requests, pageErrors: w.pageErrors });
        results.push(...checked);
        findings.push(...failures(checked));
        // A select opens over a dialog as over a page: the first dialog that has one shows it open.
        if (!nested && !selectInDialogChecked && (await overlay.getAttribute('role')) === 'dialog') {
          const inner = await overlay.evaluate((el) =>
            [...el.querySelectorAll('.select__trigger[data-testid]')]
              .filter((t) => t.getClientRects().length > 0 && !(t as HTMLButtonElement).disabled)
              .map((t) => t.getAttribute('data-testid') ?? ''),
          );
          const [select] = inner;
          if (select) {
            selectInDialogChecked = true;
            await check(`${name}-${trigger}`, select, true);
            // The dialog is still open: Escape closed the select only.
            expect(await overlay.isVisible()).toBe(true);
          }
        }
        // Closed again: Escape closes every one of them, the topmost first.
        await w.page.keyboard.press('Escape');
        await overlay.waitFor({ state: 'detached' });
        expect(await overlays.count()).toBe(before);
      };
      await openConsole(w, '/');
      await w.page.getByTestId('overview').waitFor({ state: 'visible' });
      await check('overview', 'palette-open');
      // The workspace switcher: both people are in more than one workspace.
      await check('overview', 'workspace-select');
      for (const entry of CONSOLE_PAGES) {
        if (entry.platformOnly && id === 'tenant-admin') {
          continue;
        }
        await openConsole(w, entry.path(seeded));
        await w.page.locator('main#content h1').first().waitFor({ state: 'visible' });
        await w.page
          .locator('[data-testid$="-loading"]')
          .first()
          .waitFor({ state: 'detached' })
          .catch(() => undefined);
        await nextFrames(w.page);
        const triggers = await w.page.evaluate(() => {
          const visible = (el: Element) => el.getClientRects().length > 0 && !(el as HTMLButtonElement).disabled;
          const header = [...document.querySelectorAll('main .page-header__actions [data-testid$="-open"]')].filter(visible);
          const rowMenu = [...document.querySelectorAll('main button[aria-label^="Actions for"][data-testid]')].filter(visible).slice(0, 1);
          const selects = [...document.querySelectorAll('main .select__trigger[data-testid]')].filter(visible);
          return [...header, ...rowMenu, ...selects].map((el) => el.getAttribute('data-testid') ?? '');
        });
        for (const trigger of triggers) {
          await check(entry.name, trigger);
        }
      }
      expect(findings).toEqual([]);
      expect(selectInDialogChecked).toBe(true);
      expect(w.pageErrors.splice(0)).toEqual([]);
      // Some fifty overlays, each checked four times (two widths, two schemes).
    }, 900_000);
  }

  for (const id of ['tenant-admin', 'platform-admin'] as const) {
    for (const entry of CONSOLE_PAGES) {
      if (entry.platformOnly && id === 'tenant-admin') {
        it(`${id}: console ${entry.name} is refused plainly, without a crash`, async () => {
          const w = who[id];
          await openConsole(w, entry.path(seeded));
          const panel = w.page.getByTestId('error-panel');
          await panel.waitFor({ state: 'visible' });
          expect(await panel.getByTestId('error-code').textContent()).toBe('forbidden');
          // Explained, not "Try again": asking again would be refused again.
          expect(await panel.getByRole('button', { name: 'Try again' }).count()).toBe(0);
          expect(await panel.locator('.error-panel__title').textContent()).toBe('Platform admins only');
          expect(await panel.textContent()).toContain('Only platform admins');
          await w.page.getByTestId('nav').waitFor({ state: 'visible' });
          expect(await w.page.locator('[data-testid="route-error"], [data-testid="root-error"]').count()).toBe(0);
          await saveScreenshot(w.page, `pages/${id}-${entry.name}-refused-${VIEWPORTS[0].width}`);
          expect(w.pageErrors.splice(0)).toEqual([]);
        });
        continue;
      }
      it(`${id}: console ${entry.name}`, async () => {
        const w = who[id];
        await openConsole(w, entry.path(seeded));
        await expectPagePasses(w, entry.name);
      });
    }
    for (const entry of HOSTED_PAGES) {
      it(`${id}: hosted ${entry.name}`, async () => {
        const w = who[id];
        await entry.open(w.page, seeded);
        await expectPagePasses(w, entry.name);
      });
    }
  }
});

import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { checkPage, failures, type PageResult, trackRequests, VIEWPORTS } from './support/page-checks.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_ADMIN, DEMO_USER, signInAt } from './support/sign-in.ts';

type Json = Record<string, any>;

const CONSOLE = '/auth/console';
const IDENTIFIER = 'https://api.northwind-traders.example/invoices';

/** One person's browser: its page, what the page checks need, its uncaught exceptions. */
type Who = { id: 'platform-admin' | 'tenant-admin'; page: Page; requests: { inFlight: () => number }; pageErrors: string[] };

/**
 * The product's catalog in the console (docs/authorization.md), end to end: a platform admin
 * registers an API with two permissions in the Authorization section, gives the built-in
 * org_admin one of them and creates a product role on the Product roles page; a tenant admin then builds a custom role from the product's
 * permissions, grouped by API, apart from svc's own. Each new page passes the page checks (axe,
 * layout) at both widths; the platform admin finally deletes the API, and the roles lose it.
 */
describeInChromium('e2e: the Authorization section and product permissions in the role editor', () => {
  let server: E2EServer;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const results: PageResult[] = [];

  beforeAll(async () => {
    server = await startServer();
    browser = await launchChromium();
  });

  afterAll(async () => {
    for (const context of contexts) {
      await context.close();
    }
    await browser?.close();
    await server?.stop();
  });

  async function signedIn(id: Who['id'], credentials: { email: string; password: string }, path: string): Promise<Who> {
    // bypassCSP: axe-core goes in as an inline script, which svc's CSP (rightly) refuses.
    const context = await browser.newContext({ baseURL: server.url, viewport: VIEWPORTS[0], bypassCSP: true });
    context.setDefaultTimeout(15_000);
    contexts.push(context);
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
    const requests = trackRequests(page);
    await signInAt(page, server.url, `${CONSOLE}${path}`, credentials);
    return { id, page, requests, pageErrors };
  }

  /** A call with the browser's own session (same origin, JSON), as the console makes it. */
  function api(page: Page, method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
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

  /** The page checks of console-pages.test.ts on the page `w` is on; fails with every finding. */
  async function expectPagePasses(w: Who, name: string): Promise<void> {
    // From the top, as the page opens: a click low in the navigation may have scrolled it.
    await w.page.evaluate(() => window.scrollTo(0, 0));
    const checked = await checkPage(w.page, { who: w.id, name: `authorization-${name}`, requests: w.requests, pageErrors: w.pageErrors });
    results.push(...checked);
    expect(failures(checked)).toEqual([]);
  }

  /** Picks an item of a row's "⋯" menu. */
  async function rowMenu(page: Page, row: ReturnType<Page['locator']>, menu: string, item: string): Promise<void> {
    await row.getByTestId(menu).click();
    await page.getByTestId(`${menu}-menu`).getByTestId(item).click();
  }

  /** Types `name` into a typed confirmation (its button waits for it), confirms, waits for it to close. */
  async function confirmTyped(page: Page, testId: string, name: string): Promise<void> {
    const dialog = page.getByTestId(testId);
    await dialog.waitFor({ state: 'visible' });
    expect(await dialog.getByTestId(`${testId}-confirm`).isDisabled()).toBe(true);
    await dialog.getByTestId(`${testId}-input`).fill(name);
    await dialog.getByTestId(`${testId}-confirm`).click();
    await dialog.waitFor({ state: 'detached' });
  }

  const toast = (page: Page, text: string) => page.locator('[data-sonner-toast]').filter({ hasText: text }).first().waitFor();

  it('a platform admin declares an API and product roles; a tenant admin grants a product permission in a custom role', async () => {
    // The tenant admin first: their workspace is made at first sign-in.
    const tenant = await signedIn('tenant-admin', DEMO_USER, '/');
    const platform = await signedIn('platform-admin', DEMO_ADMIN, '/');
    const p = platform.page;

    // The section in the navigation, its first page empty.
    const section = p.getByTestId('nav-section-authorization');
    await section.waitFor({ state: 'visible' });
    expect(await section.locator('a').allTextContents()).toEqual(['API resources', 'Product roles']);
    await p.getByTestId('nav-api-resources').click();
    await p.getByTestId('api-resources-empty').waitFor({ state: 'visible' });
    expect(await p.getByTestId('nav-api-resources').getAttribute('aria-current')).toBe('page');

    // Register: the contracts schema refuses a non-canonical identifier in the form; the API
    // refuses one of svc's own permission names, and the dialog says so with its code.
    await p.getByTestId('api-resource-create-open').click();
    const create = p.getByTestId('api-resource-create');
    await create.waitFor({ state: 'visible' });
    await p.getByTestId('api-resource-create-identifier').fill('HTTPS://API.Northwind-Traders.example/invoices');
    await p.getByTestId('api-resource-create-name').fill('Invoices API');
    await p.getByTestId('api-resource-create-description').fill('Invoices, credit notes and payment runs of the customer portal.');
    await p.getByTestId('api-resource-create-permission-add').click();
    await p.getByTestId('api-resource-create-permission-0-name').fill('invoices.read');
    await p.getByTestId('api-resource-create-permission-0-description').fill('Read invoices and their line items');
    await p.getByTestId('api-resource-create-permission-add').click();
    await p.getByTestId('api-resource-create-permission-1-name').fill('tenant.read');
    await p.getByTestId('api-resource-create-submit').click();
    expect(await p.getByTestId('api-resource-create-identifier-error').textContent()).toBe(
      `write the identifier in its canonical form: ${IDENTIFIER}`,
    );
    await p.getByTestId('api-resource-create-identifier').fill(IDENTIFIER);
    await p.getByTestId('api-resource-create-submit').click();
    expect(await create.getByTestId('error-code').textContent()).toBe('permission_name_reserved');
    await p.getByTestId('api-resource-create-permission-1-name').fill('invoices.create');
    await p.getByTestId('api-resource-create-permission-1-description').fill('Create and send invoices');
    await saveScreenshot(p, 'authorization-api-resource-create-dialog');
    await p.getByTestId('api-resource-create-submit').click();

    // Stored: the resource's page opens on it.
    await p.getByTestId('page-api-resource').waitFor({ state: 'visible' });
    const resourceId = (await p.getByTestId('page-api-resource').getAttribute('data-resource-id')) ?? '';
    expect(resourceId).toMatch(/^res_/);
    expect(new URL(p.url()).pathname).toBe(`${CONSOLE}/authorization/resources/${resourceId}`);
    await toast(p, 'Registered the API Invoices API');
    expect(await p.getByTestId('api-resource-detail-identifier').textContent()).toBe(IDENTIFIER);
    const permissionRow = (name: string) => p.locator(`[data-testid="api-permission-row"][data-permission="${name}"]`);
    expect(await p.getByTestId('api-permission-row').count()).toBe(2);
    expect(await permissionRow('invoices.read').getByTestId('api-permission-description').textContent()).toBe(
      'Read invoices and their line items',
    );
    // The nav keeps the section's item current on the detail page.
    expect(await p.getByTestId('nav-api-resources').getAttribute('aria-current')).toBe('page');

    // The details: the identifier is shown, never editable.
    await p.getByTestId('api-resource-edit-open').click();
    await p.getByTestId('api-resource-edit').waitFor({ state: 'visible' });
    expect(await p.getByTestId('api-resource-edit-identifier').inputValue()).toBe(IDENTIFIER);
    expect(await p.getByTestId('api-resource-edit-identifier').getAttribute('readonly')).not.toBeNull();
    await p.getByTestId('api-resource-edit-name').fill('Invoicing API');
    await p.getByTestId('api-resource-edit-submit').click();
    await p.getByTestId('api-resource-edit').waitFor({ state: 'detached' });
    await p.getByTestId('api-resource-detail-name').filter({ hasText: 'Invoicing API' }).waitFor();
    expect(await p.locator('h1').textContent()).toBe('Invoicing API');

    // Permissions: one added, one's description edited, the added one deleted by typing its name.
    await p.getByTestId('api-permission-create-open').click();
    await p.getByTestId('api-permission-create-name').fill('Invoices.Void');
    await p.getByTestId('api-permission-create-submit').click();
    await p.getByTestId('api-permission-create-name-error').waitFor({ state: 'visible' });
    await p.getByTestId('api-permission-create-name').fill('invoices.void');
    await p.getByTestId('api-permission-create-description').fill('Void a sent invoice');
    await p.getByTestId('api-permission-create-submit').click();
    await permissionRow('invoices.void').waitFor({ state: 'visible' });
    await rowMenu(p, permissionRow('invoices.create'), 'api-permission-actions', 'api-permission-edit');
    await p.getByTestId('api-permission-edit-description').fill('Create, send and remind invoices');
    await p.getByTestId('api-permission-edit-submit').click();
    await permissionRow('invoices.create').getByTestId('api-permission-description').filter({ hasText: 'remind' }).waitFor();
    await rowMenu(p, permissionRow('invoices.void'), 'api-permission-actions', 'api-permission-delete');
    await confirmTyped(p, 'api-permission-delete-dialog', 'invoices.void');
    await permissionRow('invoices.void').waitFor({ state: 'detached' });
    expect(await p.getByTestId('api-permission-row').count()).toBe(2);

    // The list: the name links to the resource, with the identifier and the count.
    await p.getByTestId('api-resource-back').click();
    const listRow = p.locator(`[data-testid="api-resource-row"][data-resource-id="${resourceId}"]`);
    await listRow.waitFor({ state: 'visible' });
    expect(await listRow.getByTestId('api-resource-identifier').textContent()).toBe(IDENTIFIER);
    expect(await listRow.getByTestId('api-resource-permission-count').textContent()).toBe('2');
    await expectPagePasses(platform, 'api-resources');

    // On a phone the navigation is a menu from the header: the section's heading stands over its items.
    await p.setViewportSize(VIEWPORTS[1]);
    await p.getByTestId('nav-toggle').click();
    await p.getByTestId('nav').waitFor({ state: 'visible' });
    const heading = await p.locator('.nav-section__title').boundingBox();
    const first = await p.getByTestId('nav-api-resources').boundingBox();
    expect(heading && first && heading.y + heading.height).toBeLessThanOrEqual(first?.y ?? 0);
    expect(await p.getByTestId('nav-api-resources').isVisible()).toBe(true);
    await saveScreenshot(p, 'authorization-nav-390');
    await p.getByTestId('nav-toggle').click();
    await p.setViewportSize(VIEWPORTS[0]);

    // Product roles: the built-in rows first, whose permissions alone change.
    await p.getByTestId('nav-product-roles').click();
    const roleRow = (key: string) => p.locator(`[data-testid="product-role-row"][data-role-key="${key}"]`);
    await roleRow('org_admin').waitFor({ state: 'visible' });
    expect(await p.getByTestId('product-role-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-role-key')))).toEqual([
      'org_admin',
      'org_member',
    ]);
    await roleRow('org_admin').getByTestId('product-role-actions').click();
    expect(await p.getByTestId('product-role-actions-menu').locator('[role="menuitem"]').allTextContents()).toEqual(['Edit permissions…']);
    await p.getByTestId('product-role-actions-menu').getByTestId('product-role-edit').click();
    const edit = p.getByTestId('product-role-edit-dialog');
    await edit.waitFor({ state: 'visible' });
    expect(await edit.getByTestId('product-role-edit-name').count()).toBe(0);
    // Grouped by API: the resource's name heads its group, each permission with its description.
    const group = edit.getByRole('group', { name: 'Invoicing API' });
    await group.waitFor({ state: 'visible' });
    expect(await group.locator('code').allTextContents()).toEqual(['invoices.create', 'invoices.read']);
    expect(await group.textContent()).toContain('Read invoices and their line items');
    await p.getByTestId('product-role-edit-permission-invoices.read').check();
    await saveScreenshot(p, 'authorization-product-role-builtin-dialog');
    await p.getByTestId('product-role-edit-dialog-submit').click();
    await edit.waitFor({ state: 'detached' });
    await roleRow('org_admin').getByTestId('product-role-permissions').filter({ hasText: 'invoices.read' }).waitFor();
    expect(await roleRow('org_member').getByTestId('product-role-permissions').textContent()).toBe('none');

    // A product role of the platform's own: the resource's box selects both of its permissions.
    await p.getByTestId('product-role-create-open').click();
    await p.getByTestId('product-role-create').waitFor({ state: 'visible' });
    await p.getByTestId('product-role-create-key').fill('billing_manager');
    await p.getByTestId('product-role-create-name').fill('Billing manager');
    await p.getByTestId('product-role-create-description').fill('Runs invoicing for a customer organization');
    const all = p.getByTestId(`product-role-create-permission-group-${resourceId}`);
    await p.getByTestId('product-role-create-permission-invoices.read').check();
    expect(await all.evaluate((box: HTMLInputElement) => box.indeterminate)).toBe(true);
    await all.check();
    expect(await p.getByTestId('product-role-create-permission-invoices.create').isChecked()).toBe(true);
    await saveScreenshot(p, 'authorization-product-role-create-dialog');
    await p.getByTestId('product-role-create-submit').click();
    await p.getByTestId('product-role-create').waitFor({ state: 'detached' });
    await roleRow('billing_manager').waitFor({ state: 'visible' });
    expect(await roleRow('billing_manager').getByTestId('product-role-permissions').locator('code').allTextContents()).toEqual([
      'invoices.create',
      'invoices.read',
    ]);
    await expectPagePasses(platform, 'product-roles');

    // The resource's page says which product roles hold each permission.
    await p.goto(`${CONSOLE}/authorization/resources/${resourceId}`);
    await permissionRow('invoices.read').getByTestId('api-permission-roles').filter({ hasText: 'org_admin' }).waitFor();
    expect(await permissionRow('invoices.read').getByTestId('api-permission-roles').locator('code').allTextContents()).toEqual([
      'org_admin',
      'billing_manager',
    ]);
    expect(await permissionRow('invoices.create').getByTestId('api-permission-roles').locator('code').allTextContents()).toEqual([
      'billing_manager',
    ]);
    await expectPagePasses(platform, 'api-resource');

    // The tenant admin's role editor: two pickers, svc's console permissions and the product's by
    // API. Their own role (org_admin) holds invoices.read only, so invoices.create is not theirs to
    // grant, and the API's box selects only what they may.
    const t = tenant.page;
    await t.getByTestId('nav-roles').click();
    const tenantRole = (key: string) => t.locator(`[data-testid="role-row"][data-role-key="${key}"]`);
    await tenantRole('billing_manager').waitFor({ state: 'visible' });
    expect(await tenantRole('billing_manager').getAttribute('data-kind')).toBe('product');
    expect(await tenantRole('billing_manager').getByTestId('role-product').textContent()).toBe('Product');
    expect(await tenantRole('billing_manager').getByTestId('role-actions').count()).toBe(0);
    expect(await tenantRole('org_admin').getByTestId('role-product-permissions').locator('code').allTextContents()).toEqual([
      'invoices.read',
    ]);
    await t.getByTestId('roles-create-open').click();
    const roleDialog = t.getByTestId('roles-create');
    await roleDialog.waitFor({ state: 'visible' });
    expect(await roleDialog.locator('legend').allTextContents()).toEqual(['Your product’s permissions', 'svc console permissions']);
    await t.getByTestId('roles-create-key').fill('invoice_clerk');
    await t.getByTestId('roles-create-name').fill('Invoice clerk');
    await t.getByTestId('roles-create-permission-tenant.read').check();
    const product = t.getByTestId('roles-create-product-permission');
    await product.getByRole('group', { name: 'Invoicing API' }).waitFor({ state: 'visible' });
    // Disabled once the console knows the admin's own role (it reads the organization's roles).
    await t.locator('[data-testid="roles-create-product-permission-invoices.create"]:disabled').waitFor();
    await t.getByTestId(`roles-create-product-permission-group-${resourceId}`).check();
    expect(await t.getByTestId('roles-create-product-permission-invoices.read').isChecked()).toBe(true);
    expect(await t.getByTestId('roles-create-product-permission-invoices.create').isChecked()).toBe(false);
    await saveScreenshot(t, 'authorization-custom-role-create-dialog');
    await t.getByTestId('roles-create-submit').click();
    await roleDialog.waitFor({ state: 'detached' });
    await tenantRole('invoice_clerk').waitFor({ state: 'visible' });
    expect(await tenantRole('invoice_clerk').getByTestId('role-custom').textContent()).toBe('Custom');
    expect(await tenantRole('invoice_clerk').getByTestId('role-product-permissions').locator('code').allTextContents()).toEqual([
      'invoices.read',
    ]);
    expect(await tenantRole('invoice_clerk').getByTestId('role-permissions').locator('code').allTextContents()).toEqual(['tenant.read']);
    const me = await api(t, 'GET', '/v1/me');
    const slug = me.body.activeWorkspace.slug as string;
    const roles = await api(t, 'GET', `/v1/roles?organization_slug=${slug}`);
    const clerk = roles.body.data.find((role: Json) => role.key === 'invoice_clerk');
    expect(clerk).toMatchObject({ kind: 'custom', permissions: ['tenant.read'], productPermissions: ['invoices.read'] });
    await expectPagePasses(tenant, 'roles');

    // The role's name opens its own page (/roles/<key>): every permission of both catalogs, one a
    // line; a reload keeps it and the browser's back returns to the list.
    await tenantRole('invoice_clerk').getByTestId('role-name').click();
    const roleDetail = t.getByTestId('role-detail');
    await roleDetail.waitFor({ state: 'visible' });
    expect(new URL(t.url()).pathname).toBe('/auth/console/roles/invoice_clerk');
    expect(await roleDetail.getByTestId('role-detail-key').textContent()).toBe('invoice_clerk');
    expect(await roleDetail.getByTestId('role-detail-id').textContent()).toBe(clerk.id);
    await t.reload();
    await roleDetail.getByTestId('role-detail-permissions').waitFor({ state: 'visible' });
    expect(await roleDetail.getByTestId('role-detail-permissions').locator('code').allTextContents()).toEqual(['tenant.read']);
    expect(await roleDetail.getByTestId('role-detail-product-permissions').locator('code').allTextContents()).toEqual(['invoices.read']);
    await saveScreenshot(t, 'authorization-custom-role-page');
    await t.goBack();
    await tenantRole('invoice_clerk').waitFor({ state: 'visible' });

    // The edit dialog starts from what is stored, in both pickers.
    await rowMenu(t, tenantRole('invoice_clerk'), 'role-actions', 'role-edit');
    await t.getByTestId('role-edit-dialog').waitFor({ state: 'visible' });
    expect(await t.getByTestId('role-edit-product-permission-invoices.read').isChecked()).toBe(true);
    expect(await t.getByTestId('role-edit-permission-tenant.read').isChecked()).toBe(true);
    await t.getByTestId('role-edit-dialog-cancel').click();
    await t.getByTestId('role-edit-dialog').waitFor({ state: 'detached' });

    // The tenant admin reads the catalog (roles.read), without anything to change.
    await t.getByTestId('nav-api-resources').click();
    await t.getByTestId('api-resources-read-only').waitFor({ state: 'visible' });
    expect(await t.getByTestId('api-resource-create-open').count()).toBe(0);
    await expectPagePasses(tenant, 'api-resources');
    await t.getByTestId('api-resource-link').click();
    await t.getByTestId('api-permissions-table').waitFor({ state: 'visible' });
    expect(await t.getByTestId('api-permission-actions').count()).toBe(0);
    expect(await t.getByTestId('api-resource-delete').count()).toBe(0);
    await expectPagePasses(tenant, 'api-resource');
    await t.getByTestId('nav-product-roles').click();
    await t.getByTestId('product-roles-read-only').waitFor({ state: 'visible' });
    await t.locator('[data-testid="product-role-row"][data-role-key="billing_manager"]').waitFor({ state: 'visible' });
    expect(await t.getByTestId('product-role-actions').count()).toBe(0);
    await expectPagePasses(tenant, 'product-roles');

    // A product role someone is invited into is not deleted: the API's message, in a toast.
    const invited = await api(t, 'POST', '/v1/invitations', {
      organization_slug: slug,
      email: 'maria.silva@northwind-traders.example',
      roleKey: 'billing_manager',
    });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    await p.goto(`${CONSOLE}/authorization/product-roles`);
    await rowMenu(p, roleRow('billing_manager'), 'product-role-actions', 'product-role-delete');
    await confirmTyped(p, 'product-role-delete-dialog', 'Billing manager');
    const refusal = p.locator('[data-sonner-toast]').filter({ hasText: 'Could not delete the product role Billing manager' });
    await refusal.waitFor({ state: 'visible' });
    expect(await refusal.textContent()).toContain('1 pending invitation');
    expect(await roleRow('billing_manager').count()).toBe(1);

    // Deleting the API, confirmed by its name, takes its permissions out of every role.
    await p.goto(`${CONSOLE}/authorization/resources/${resourceId}`);
    await p.getByTestId('api-resource-delete-button').click();
    const consequence = await p.getByTestId('api-resource-delete-dialog').textContent();
    expect(consequence).toContain('invoices.create and invoices.read');
    expect(consequence).toContain('the product roles Organization admin and Billing manager');
    await saveScreenshot(p, 'authorization-api-resource-delete-dialog');
    await confirmTyped(p, 'api-resource-delete-dialog', 'Invoicing API');
    await p.getByTestId('api-resources-empty').waitFor({ state: 'visible' });
    await toast(p, 'Deleted the API Invoicing API');
    const after = await api(t, 'GET', `/v1/roles?organization_slug=${slug}`);
    expect(after.body.data.find((role: Json) => role.key === 'invoice_clerk').productPermissions).toEqual([]);
    expect(after.body.data.find((role: Json) => role.key === 'org_admin').productPermissions).toEqual([]);

    expect([...platform.pageErrors, ...tenant.pageErrors]).toEqual([]);
  });
});

import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../test/support/db.ts';
import { freePort } from '../test/support/server.ts';
import { type SpawnedServer, spawnServer } from '../test/support/spawn.ts';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { chooseOption } from './support/select.ts';
import { atSignIn, DEMO_ADMIN, DEMO_USER, signInAt } from './support/sign-in.ts';

/** A second person at the dev engine, with a verified email: the admin adds them on the Users page. */
const MEMBER = { email: 'member@svc.local', password: 'member-password', name: 'Mia Member' } as const;

/**
 * The Users and Sessions pages as a tenant admin uses them, with a second browser signed in as a
 * member: the demo user (admin of the workspace made at their first sign-in) invites the member,
 * who accepts in their console; the admin then revokes the member's session (that console is
 * signed out), suspends the membership (that console loses the organization, not its sign-in),
 * reactivates and removes it.
 */
describeInChromium('e2e: users and sessions', () => {
  let server: SpawnedServer;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    server = await spawnServer({
      DATABASE_URL: await createTestDatabase(),
      LOG_LEVEL: 'warn',
      WORKER_ENABLED: 'true',
      DEV_ENGINE_PORT: String(await freePort()),
      DEV_ENGINE_USERS: JSON.stringify([
        { ...DEMO_ADMIN, groups: ['platform-admins'], emailVerified: true },
        { ...DEMO_USER, groups: [], emailVerified: true },
        { ...MEMBER, groups: [], emailVerified: true },
      ]),
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    for (const context of contexts) {
      await context.close();
    }
    await browser?.close();
    await server?.stop();
  });

  /** A browser of its own: no cookie of svc or the engine is shared with another. */
  async function newBrowserPage(): Promise<Page> {
    const context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(15_000);
    contexts.push(context);
    const page = await context.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
    return page;
  }

  /** Picks `testId` in the row's "⋯" menu and confirms it (typing `typed` first when asked to). */
  async function confirm(row: Locator, actionsTestId: string, testId: string, typed?: string): Promise<void> {
    const page = row.page();
    await row.getByTestId(actionsTestId).click();
    await page.getByTestId(testId).click();
    const dialog = page.getByTestId(`${testId}-dialog`);
    await dialog.waitFor({ state: 'visible' });
    if (typed !== undefined) {
      await dialog.getByTestId(`${testId}-dialog-input`).fill(typed);
    }
    await dialog.getByTestId(`${testId}-dialog-confirm`).click();
    await dialog.waitFor({ state: 'detached' });
  }

  /** The member's console asks the api for data; with the session gone it lands on hosted sign-in. */
  async function expectSignedOut(page: Page): Promise<void> {
    await page.getByTestId('nav-people').click();
    await page.waitForURL(atSignIn);
    expect(new URL(page.url()).searchParams.get('return_to')).toBe('/auth/console/people/members');
  }

  /** Opens the admin's organization in a member's console (the workspace switcher). */
  async function openWorkspace(page: Page, slug: string, name: string): Promise<void> {
    await chooseOption(page, 'workspace-select', slug);
    await page.getByTestId('workspace-name').filter({ hasText: name }).waitFor();
  }

  it('an admin invites a user who accepts, revokes their session (signed out), suspends and reactivates the membership', async () => {
    const workspace = `${DEMO_USER.name}'s workspace`;
    const admin = await newBrowserPage();
    await signInAt(admin, server.url, '/auth/console/users', DEMO_USER);
    await admin.getByTestId('users-table').waitFor({ state: 'visible' });
    const selfRole = admin.locator(`[data-testid="user-row"][data-email="${DEMO_USER.email}"] [data-testid="user-role"]`);
    // Roles by name, the key beside it for tools.
    expect(await selfRole.textContent()).toBe('Organization admin');
    expect(await selfRole.getAttribute('data-role-key')).toBe('org_admin');

    // A malformed email is refused by the form, before any request.
    await admin.getByTestId('users-create-open').click();
    await admin.getByTestId('users-create-email').fill('not-an-email');
    await admin.getByTestId('users-create-submit').click();
    await admin.getByTestId('users-create-email-error').waitFor({ state: 'visible' });

    await admin.getByTestId('users-create-email').fill(MEMBER.email);
    await admin.getByTestId('users-create-name').fill(MEMBER.name);
    await admin.getByTestId('users-create-submit').click();
    await admin.getByTestId('users-create').waitFor({ state: 'detached' });
    const userRow = admin.locator(`[data-testid="user-row"][data-email="${MEMBER.email}"]`);
    await userRow.waitFor({ state: 'visible' });
    // Invited: the admin sees what they typed, nothing of the person, until the person accepts.
    expect(await userRow.getByTestId('user-status').textContent()).toBe('invited');
    expect(await userRow.getByTestId('user-role').getAttribute('data-role-key')).toBe('org_member');
    // An invitation can only be withdrawn: no role change, no suspension.
    await userRow.getByTestId('user-actions').click();
    await admin.getByTestId('user-remove').waitFor({ state: 'visible' });
    expect(await admin.getByTestId('user-suspend').count()).toBe(0);
    expect(await admin.getByTestId('user-change-role').count()).toBe(0);
    await admin.keyboard.press('Escape');
    await admin.getByTestId('user-actions-menu').waitFor({ state: 'detached' });

    // Adding them twice: the error panel shows the api's code.
    await admin.getByTestId('users-create-open').click();
    await admin.getByTestId('users-create-email').fill(MEMBER.email);
    await admin.getByTestId('users-create-submit').click();
    const createPanel = admin.getByTestId('users-create').getByTestId('error-panel');
    await createPanel.waitFor({ state: 'visible' });
    expect(await createPanel.getByTestId('error-code').textContent()).toBe('already_member');
    await admin.getByTestId('users-create-cancel').click();
    await admin.getByTestId('users-create').waitFor({ state: 'detached' });

    // The last admin cannot step down: the dialog shows why, with the code, and the role stays.
    const selfRow = admin.locator(`[data-testid="user-row"][data-email="${DEMO_USER.email}"]`);
    await selfRow.getByTestId('user-actions').click();
    await admin.getByTestId('user-change-role').click();
    const roleDialog = admin.getByTestId('user-role-dialog');
    await roleDialog.getByTestId('user-role-select').click();
    await admin.getByTestId('user-role-select-option-org_member').click();
    expect(await roleDialog.getByTestId('user-role-select').textContent()).toContain('Organization member');
    await roleDialog.getByTestId('user-role-dialog-submit').click();
    await roleDialog.getByTestId('error-code').filter({ hasText: 'last_org_admin' }).waitFor();
    await roleDialog.getByTestId('user-role-dialog-cancel').click();
    await roleDialog.waitFor({ state: 'detached' });
    expect(await selfRole.getAttribute('data-role-key')).toBe('org_admin');
    await saveScreenshot(admin, 'users-sessions-users');

    // The member signs in in another browser: a workspace of their own, and the admin's
    // organization waiting for their answer. They accept and open it.
    const member = await newBrowserPage();
    await signInAt(member, server.url, '/auth/console', MEMBER);
    const pending = member.getByTestId('pending-membership');
    await pending.waitFor({ state: 'visible' });
    expect(await pending.textContent()).toContain(workspace);
    const slug = (await pending.getAttribute('data-organization-slug')) ?? '';
    expect(await member.getByTestId('workspace-name').textContent()).not.toContain(workspace);
    await saveScreenshot(member, 'users-sessions-pending-membership');
    await pending.getByTestId('pending-accept').click();
    await pending.waitFor({ state: 'detached' });
    await openWorkspace(member, slug, workspace);

    await admin.getByTestId('nav-sessions').click();
    await admin.getByTestId('sessions-table').waitFor({ state: 'visible' });
    const sessionRow = admin.locator(`[data-testid="session-row"][data-email="${MEMBER.email}"]`);
    await sessionRow.waitFor({ state: 'visible' });
    expect(await sessionRow.getByTestId('session-status').textContent()).toBe('active');
    expect(await sessionRow.getByTestId('session-device').textContent()).toMatch(/^Chrome on Linux$/);
    expect(await sessionRow.getByTestId('session-current').count()).toBe(0);
    expect(
      await admin.locator(`[data-testid="session-row"][data-email="${DEMO_USER.email}"] [data-testid="session-current"]`).count(),
    ).toBe(1);
    await saveScreenshot(admin, 'users-sessions-sessions');

    await confirm(sessionRow, 'session-actions', 'session-revoke');
    await sessionRow.waitFor({ state: 'detached' });
    await expectSignedOut(member);

    // Signed in again (a fresh browser), in the admin's organization; then the membership is
    // suspended from the Users page: the member keeps their sign-in and their own workspace, and
    // loses this organization at once.
    const again = await newBrowserPage();
    await signInAt(again, server.url, '/auth/console', MEMBER);
    await openWorkspace(again, slug, workspace);
    await admin.getByTestId('nav-users').click();
    // Fetched afresh: the member accepted since this page last loaded.
    await admin.reload();
    await userRow.waitFor({ state: 'visible' });
    await userRow.getByTestId('user-status').filter({ hasText: 'active' }).waitFor();
    expect(await userRow.getByTestId('user-name').textContent()).toBe(MEMBER.name);
    await confirm(userRow, 'user-actions', 'user-suspend');
    await userRow.getByTestId('user-status').filter({ hasText: 'suspended' }).waitFor();
    await again.reload();
    await again.getByTestId('workspace-name').waitFor();
    expect(await again.getByTestId('workspace-name').textContent()).not.toContain(workspace);
    expect(await again.getByTestId('workspace-select').count()).toBe(0);
    await saveScreenshot(admin, 'users-sessions-users-suspended');

    await confirm(userRow, 'user-actions', 'user-reactivate');
    await userRow.getByTestId('user-status').filter({ hasText: 'active' }).waitFor();

    // The name opens the user's own page (/users/<id>): email, id, status and role here, kept by
    // a reload; back returns to the list.
    const userId = (await userRow.getAttribute('data-user-id')) ?? '';
    await userRow.getByTestId('user-name').click();
    const userPage = admin.getByTestId('user-detail');
    await userPage.waitFor({ state: 'visible' });
    expect(new URL(admin.url()).pathname).toBe(`/auth/console/users/${userId}`);
    await admin.reload();
    await userPage.getByTestId('user-detail-status').filter({ hasText: 'active' }).waitFor();
    expect(await userPage.getByTestId('user-detail-email').textContent()).toContain(MEMBER.email);
    expect(await userPage.getByTestId('user-detail-id').textContent()).toBe(userId);
    expect(await userPage.getByTestId('user-detail-role').textContent()).toContain('org_member');
    await saveScreenshot(admin, 'users-sessions-user-page');
    await admin.goBack();
    await userRow.waitFor({ state: 'visible' });

    // Removed from the organization: the row goes, and the member's console no longer offers it.
    const third = await newBrowserPage();
    await signInAt(third, server.url, '/auth/console', MEMBER);
    await openWorkspace(third, slug, workspace);
    await confirm(userRow, 'user-actions', 'user-remove', MEMBER.email);
    await userRow.waitFor({ state: 'detached' });
    await third.reload();
    await third.getByTestId('workspace-name').waitFor();
    expect(await third.getByTestId('workspace-name').textContent()).not.toContain(workspace);
    expect(pageErrors).toEqual([]);
  });
});

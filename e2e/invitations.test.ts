import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { chooseOption } from './support/select.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { atSignIn, DEMO_USER, passwordSignIn } from './support/sign-in.ts';

/**
 * Roles and invitations end to end: an admin (the social demo user, admin of the workspace made
 * at first sign-in) defines a role and invites the demo user; the demo user, in another browser,
 * opens the link, signs in at the engine and accepts; the admin then sees the new member.
 */
describeInChromium('e2e: roles, invitations and accepting an invite link', () => {
  let server: E2EServer;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const pageErrors: string[] = [];

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

  /** A browser context of its own: no cookie of svc or the engine is shared between people. */
  async function freshPage(): Promise<Page> {
    const context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(15_000);
    contexts.push(context);
    const page = await context.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
    return page;
  }

  /** The social demo user administers their own new workspace. */
  async function signInAsAdmin(page: Page, path: string): Promise<string> {
    await page.goto(path);
    await page.waitForURL(atSignIn);
    await page.getByTestId('continue-social').click();
    await page.waitForURL(`${server.url}${path}`);
    await page.getByTestId('workspace-name').waitFor({ state: 'visible' });
    return (await page.getByTestId('workspace-name').textContent()) ?? '';
  }

  it('the admin creates a role and invites user@svc.local, who accepts; the admin sees the member; a revoked link is refused', async () => {
    const admin = await freshPage();
    const workspace = await signInAsAdmin(admin, '/auth/console/roles');
    expect(workspace).toBe("Social User's workspace");

    // Roles: the system roles are listed and read-only (no menu); create a custom role, then edit it.
    await admin.getByTestId('roles-table').waitFor({ state: 'visible' });
    const systemRow = admin.locator('[data-testid="role-row"][data-role-key="org_admin"]');
    expect(await systemRow.getByTestId('role-system').textContent()).toBe('System');
    expect(await systemRow.getByTestId('role-actions').count()).toBe(0);
    await admin.getByTestId('roles-create-open').click();
    await admin.getByTestId('roles-create-key').fill('Bad Key');
    await admin.getByTestId('roles-create-name').fill('Support');
    await admin.getByTestId('roles-create-submit').click();
    await admin.getByTestId('roles-create-key-error').waitFor({ state: 'visible' });
    await admin.getByTestId('roles-create-key').fill('support');
    await admin.getByTestId('roles-create-permission-tenant.read').check();
    // A group's box checks the whole group, and clears it again.
    const members = admin.getByTestId('roles-create-permission-group-members');
    await members.check();
    expect(await admin.getByTestId('roles-create-permission-members.manage').isChecked()).toBe(true);
    await members.uncheck();
    expect(await admin.getByTestId('roles-create-permission-members.read').isChecked()).toBe(false);
    await admin.getByTestId('roles-create-permission-members.read').check();
    // One of two checked: the group's box is mixed.
    expect(await members.evaluate((box: HTMLInputElement) => box.indeterminate)).toBe(true);
    await saveScreenshot(admin, 'invitations-roles-create-dialog');
    await admin.getByTestId('roles-create-submit').click();
    await admin.getByTestId('roles-create').waitFor({ state: 'detached' });
    const supportRow = admin.locator('[data-testid="role-row"][data-role-key="support"]');
    await supportRow.waitFor({ state: 'visible' });
    expect(await supportRow.getByTestId('role-permissions').locator('code').allTextContents()).toEqual(['members.read', 'tenant.read']);

    // The same key again: the API's 409 is shown with its code, in the dialog.
    await admin.getByTestId('roles-create-open').click();
    await admin.getByTestId('roles-create-key').fill('support');
    await admin.getByTestId('roles-create-name').fill('Support again');
    await admin.getByTestId('roles-create-submit').click();
    expect(await admin.getByTestId('roles-create').getByTestId('error-code').textContent()).toBe('role_key_taken');
    await admin.getByTestId('roles-create-cancel').click();

    await supportRow.getByRole('button', { name: 'Actions for Support' }).click();
    await admin.getByRole('menuitem', { name: 'Edit…' }).click();
    // The dialog opens with the role as it is.
    expect(await admin.getByTestId('role-edit-name').inputValue()).toBe('Support');
    expect(await admin.getByTestId('role-edit-permission-tenant.read').isChecked()).toBe(true);
    await admin.getByTestId('role-edit-name').fill('Support agent');
    await admin.getByTestId('role-edit-permission-invitations.read').check();
    await admin.getByTestId('role-edit-dialog-submit').click();
    await admin.getByTestId('role-edit-dialog').waitFor({ state: 'detached' });
    await supportRow.getByTestId('role-name').filter({ hasText: 'Support agent' }).waitFor();
    expect(await supportRow.getByTestId('role-permissions').locator('code').allTextContents()).toEqual([
      'invitations.read',
      'members.read',
      'tenant.read',
    ]);
    await saveScreenshot(admin, 'invitations-roles-page');

    // An unused custom role is deleted from its menu (last, destructive), confirmed by typing its name.
    await admin.getByTestId('roles-create-open').click();
    await admin.getByTestId('roles-create-key').fill('temporary');
    await admin.getByTestId('roles-create-name').fill('Temporary');
    await admin.getByTestId('roles-create-submit').click();
    await admin.getByTestId('roles-create').waitFor({ state: 'detached' });
    const temporaryRow = admin.locator('[data-testid="role-row"][data-role-key="temporary"]');
    await temporaryRow.waitFor({ state: 'visible' });
    await temporaryRow.getByRole('button', { name: 'Actions for Temporary' }).click();
    const roleMenu = admin.getByTestId('role-actions-menu');
    expect(await roleMenu.getByRole('menuitem').allTextContents()).toEqual(['Edit…', 'Delete…']);
    expect(await roleMenu.locator('[role="separator"] + [role="menuitem"]').textContent()).toBe('Delete…');
    await roleMenu.getByRole('menuitem', { name: 'Delete…' }).click();
    const deleteRole = admin.getByTestId('role-delete-dialog');
    await deleteRole.waitFor({ state: 'visible' });
    expect(await deleteRole.getByRole('heading').textContent()).toBe('Delete the role Temporary?');
    const deleteButton = deleteRole.getByRole('button', { name: 'Delete role' });
    expect(await deleteButton.isDisabled()).toBe(true);
    await deleteRole.getByTestId('role-delete-dialog-input').fill('temporary');
    expect(await deleteButton.isDisabled()).toBe(true);
    await deleteRole.getByTestId('role-delete-dialog-input').fill('Temporary');
    await saveScreenshot(admin, 'invitations-roles-delete-confirm');
    await deleteButton.click();
    await deleteRole.waitFor({ state: 'detached' });
    await temporaryRow.waitFor({ state: 'detached' });
    expect(await admin.locator('[data-testid="role-row"]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-role-key')))).toEqual(
      ['org_admin', 'org_member', 'support'],
    );

    // Invitations: invite the demo user as a support agent; the link is shown once.
    await admin.goto('/auth/console/invitations');
    await admin.getByTestId('invitations-empty').waitFor({ state: 'visible' });
    await admin.getByTestId('invitations-create-open').click();
    await admin.getByTestId('invitations-create-email').fill('not an email');
    await admin.getByTestId('invitations-create-submit').click();
    await admin.getByTestId('invitations-create-email-error').waitFor({ state: 'visible' });
    await admin.getByTestId('invitations-create-email').fill(DEMO_USER.email);
    // The role picker names roles; the custom role is there once the roles have loaded.
    await chooseOption(admin, 'invitations-create-role', 'support');
    expect(await admin.getByTestId('invitations-create-role').textContent()).toContain('Support agent');
    await saveScreenshot(admin, 'invitations-invite-dialog');
    await admin.getByTestId('invitations-create-submit').click();
    await admin.getByTestId('invite-link').waitFor({ state: 'visible' });
    const inviteLink = (await admin.getByTestId('invite-link-value').textContent()) ?? '';
    // Copy puts the link on the clipboard, as the admin would paste it into a message.
    await admin.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    await admin.getByTestId('invite-link-copy').click();
    await admin.getByTestId('invite-link-copy').filter({ hasText: 'Copied' }).waitFor();
    expect(await admin.evaluate(() => navigator.clipboard.readText())).toBe(inviteLink);
    expect(inviteLink).toMatch(new RegExp(`^${server.url}/invitations/accept\\?token=svc_inv_[0-9A-Za-z]{40}$`));
    await saveScreenshot(admin, 'invitations-page-created');
    await admin.getByTestId('invite-link-dismiss').click();
    await admin.getByTestId('invitations-created').waitFor({ state: 'detached' });
    const row = admin.locator(`[data-testid="invitation-row"][data-email="${DEMO_USER.email}"]`);
    expect(await row.getByTestId('invitation-status').textContent()).toBe('pending');
    // The role by its name, its key alongside.
    expect(await row.getByTestId('invitation-role').textContent()).toBe('Support agent');
    expect(await row.getByTestId('invitation-role').getAttribute('data-role-key')).toBe('support');
    // The link is nowhere in the list.
    expect(await admin.getByTestId('invitations-table').textContent()).not.toContain('svc_inv_');

    // A second invitation: Resend makes a new link (the first one stops working), then Revoke, each confirmed.
    await admin.getByTestId('invitations-create-open').click();
    await admin.getByTestId('invitations-create-email').fill('someone.else@example.com');
    await admin.getByTestId('invitations-create-submit').click();
    const replacedLink = (await admin.getByTestId('invite-link-value').textContent()) ?? '';
    expect(replacedLink).not.toBe(inviteLink);
    await admin.getByTestId('invite-link-dismiss').click();
    const other = admin.locator('[data-testid="invitation-row"][data-email="someone.else@example.com"][data-status="pending"]');
    const firstId = await other.getAttribute('data-invitation-id');
    await other.getByRole('button', { name: 'Actions for someone.else@example.com' }).click();
    const menu = admin.getByRole('menu');
    expect(await menu.getByRole('menuitem').allTextContents()).toEqual(['Resend…', 'Revoke…']);
    await menu.getByRole('menuitem', { name: 'Resend…' }).click();
    // One request: the API revokes and reissues in one transaction (never a revoke, then a create).
    const mutations: string[] = [];
    const recordMutation = (request: { method(): string; url(): string }) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname.startsWith('/trpc/')) {
        mutations.push(new URL(request.url()).pathname.slice('/trpc/'.length));
      }
    };
    admin.on('request', recordMutation);
    await admin.getByTestId('invitation-resend-dialog-confirm').click();
    await admin.getByTestId('invite-link-value').filter({ hasNotText: replacedLink }).waitFor();
    admin.off('request', recordMutation);
    expect(mutations).toEqual(['invitations.resend']);
    const revokedLink = (await admin.getByTestId('invite-link-value').textContent()) ?? '';
    expect(revokedLink).not.toBe(replacedLink);
    await admin.getByTestId('invite-link-dismiss').click();
    // The old invitation is revoked, the new one pending under another id.
    await admin.locator(`[data-testid="invitation-row"][data-invitation-id="${firstId}"][data-status="revoked"]`).waitFor();
    await other.waitFor();
    expect(await other.getAttribute('data-invitation-id')).not.toBe(firstId);
    await other.getByRole('button', { name: 'Actions for someone.else@example.com' }).click();
    await admin.getByRole('menuitem', { name: 'Revoke…' }).click();
    await admin.getByTestId('invitation-revoke-dialog-confirm').click();
    await admin.getByTestId('invitation-revoke-dialog').waitFor({ state: 'detached' });
    await other.waitFor({ state: 'detached' });
    expect(
      await admin.locator('[data-testid="invitation-row"][data-email="someone.else@example.com"][data-status="revoked"]').count(),
    ).toBe(2);

    // The invitee, in another browser: the link, hosted sign-in at the engine, the accept page.
    const invitee = await freshPage();
    await invitee.goto(inviteLink);
    await invitee.waitForURL(`${server.url}/invitations/accept`);
    expect(await invitee.getByTestId('hosted-heading').textContent()).toBe('You have an invitation');
    await invitee.getByTestId('invitation-sign-in').click();
    await invitee.waitForURL(atSignIn);
    await passwordSignIn(invitee, server.url, DEMO_USER);
    await invitee.waitForURL(`${server.url}/invitations/accept`);
    expect(await invitee.getByTestId('invitation-organization').textContent()).toBe(workspace);
    expect(await invitee.getByTestId('invitation-role').textContent()).toBe('Support agent');
    expect(await invitee.getByTestId('invitation-signed-in-as').textContent()).toBe(DEMO_USER.email);
    await saveScreenshot(invitee, 'invitations-accept-page');
    await invitee.getByTestId('accept-invitation').click();
    await invitee.waitForURL(`${server.url}/auth/console/`);
    await invitee.getByTestId('workspace-name').filter({ hasText: workspace }).waitFor();
    await saveScreenshot(invitee, 'invitations-accepted-console');

    // The same link again, and the revoked one: refused, each with its code.
    await invitee.goto(inviteLink);
    expect(await invitee.getByTestId('invitation-error-code').textContent()).toBe('invitation_already_accepted');
    await invitee.goto(revokedLink);
    expect(await invitee.getByTestId('invitation-error-code').textContent()).toBe('invitation_revoked');
    // The link a resend replaced was revoked by it.
    await invitee.goto(replacedLink);
    expect(await invitee.getByTestId('invitation-error-code').textContent()).toBe('invitation_revoked');
    await saveScreenshot(invitee, 'invitations-accept-refused');

    // The admin sees the member, with the invited role, and the invitation accepted.
    await admin.goto('/auth/console/members');
    const member = admin.locator('[data-testid="member-row"]').filter({ hasText: DEMO_USER.email });
    await member.waitFor({ state: 'visible' });
    expect(await member.getByTestId('member-role').getAttribute('data-role-key')).toBe('support');
    await saveScreenshot(admin, 'invitations-members-after-accept');
    // The member's name opens their page among the Users, with the invited role.
    await member.getByTestId('member-name').click();
    await admin.getByTestId('user-detail').waitFor({ state: 'visible' });
    expect(new URL(admin.url()).pathname).toMatch(/^\/auth\/console\/users\/usr_[0-9A-Za-z]{20}$/);
    expect(await admin.getByTestId('user-detail-email').textContent()).toContain(DEMO_USER.email);
    expect(await admin.getByTestId('user-detail-role').textContent()).toContain('support');
    await admin.goto('/auth/console/invitations');
    await chooseOption(admin, 'invitations-filter-status', 'accepted');
    const accepted = admin.locator('[data-testid="invitation-row"]');
    await accepted.first().getByTestId('invitation-status').filter({ hasText: 'accepted' }).waitFor();
    expect(await accepted.count()).toBe(1);
    expect(await accepted.getByTestId('invitation-email').textContent()).toBe(DEMO_USER.email);
    await saveScreenshot(admin, 'invitations-page');

    // The role the member now holds cannot be deleted: the API's refusal, saying who holds it, is an error toast.
    await admin.goto('/auth/console/roles');
    const heldRow = admin.locator('[data-testid="role-row"][data-role-key="support"]');
    await heldRow.getByRole('button', { name: 'Actions for Support agent' }).click();
    await admin.getByRole('menuitem', { name: 'Delete…' }).click();
    await admin.getByTestId('role-delete-dialog-input').fill('Support agent');
    await admin.getByTestId('role-delete-dialog-confirm').click();
    const refusal = admin.locator('[data-sonner-toast]').filter({ hasText: 'Could not delete the role Support agent' });
    await refusal.waitFor({ state: 'visible' });
    expect(await refusal.textContent()).toContain('is held by 1 member');
    await admin.getByTestId('role-delete-dialog').waitFor({ state: 'detached' });
    expect(await heldRow.count()).toBe(1);

    expect(pageErrors, 'uncaught exceptions in the pages').toEqual([]);
  });
});

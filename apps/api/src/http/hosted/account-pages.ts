import type { TMeResponse } from '@svc/contracts/me';
import type { AccountHandOff, EngineOffers } from '../../modules/auth/engine-presets.ts';
import { escapeHtml, hostedPage } from '../../modules/shared/hosted-page.ts';

/** The engine's account flows (docs/architecture.md section 6), each a svc hand-off route that comes back here. */
const ACCOUNT_LINKS: { handOff: AccountHandOff; href: string; label: string; testId: string }[] = [
  { handOff: 'recovery', href: '/auth/recovery', label: 'Change or reset your password', testId: 'account-recovery' },
  { handOff: 'email_verification', href: '/auth/verify-email', label: 'Verify your email', testId: 'account-verify-email' },
  { handOff: 'mfa_setup', href: '/auth/mfa', label: 'Set up two-factor authentication', testId: 'account-mfa' },
  { handOff: 'passkey_setup', href: '/auth/passkeys', label: 'Register a passkey', testId: 'account-passkeys' },
];

const RETURN_HERE = `return_to=${encodeURIComponent('/user')}`;

/** Narrower than a table page, wider than sign-in; the rest is the hosted stylesheet's (dl, lists, badge). */
const STYLE = '<style>main{max-width:560px}</style>';

/**
 * /user: who is signed in, where, and the way to every account flow. Every value that came from
 * the engine or a user (name, email, workspace and organization names) is escaped.
 */
export function accountPage(me: TMeResponse, offers: EngineOffers): string {
  const workspace = me.activeWorkspace
    ? `<span data-testid="account-workspace">${escapeHtml(me.activeWorkspace.name)}</span> <span class="muted" data-testid="account-workspace-kind">(${me.activeWorkspace.kind} workspace)</span>`
    : '<span class="muted" data-testid="account-workspace">none</span>';
  const memberships = me.memberships.length
    ? `<ul data-testid="account-memberships">${me.memberships
        .map(
          (m) =>
            `<li>${escapeHtml(m.organization.name)} <span class="muted">(${escapeHtml(m.organization.slug)}, ${escapeHtml(m.roleKey)})</span></li>`,
        )
        .join('')}</ul>`
    : '<p class="muted" data-testid="account-memberships">No organization memberships.</p>';
  const pending = me.pendingMemberships.length
    ? `<h2>Waiting for your answer</h2><p class="muted">These organizations added you; you join one only once you accept it in the console.</p><ul data-testid="account-pending-memberships">${me.pendingMemberships
        .map(
          (m) =>
            `<li>${escapeHtml(m.organization.name)} <span class="muted">(${escapeHtml(m.organization.slug)}, ${escapeHtml(m.roleKey)})</span></li>`,
        )
        .join('')}</ul>`
    : '';
  // Only what the engine offers; a page of the engine that does not send the person back opens
  // in a tab of its own, so this one stays.
  const links = ACCOUNT_LINKS.filter((l) => offers.handOffs[l.handOff])
    .map((l) =>
      offers.comesBack[l.handOff]
        ? `<li><a href="${l.href}?${RETURN_HERE}" data-testid="${l.testId}">${l.label}</a></li>`
        : `<li><a href="${l.href}?${RETURN_HERE}" target="_blank" rel="noopener" data-testid="${l.testId}">${l.label}</a> <span class="muted">(opens your identity provider in a new tab)</span></li>`,
    )
    .join('');
  const security = links
    ? `<h2>Security</h2><p class="muted">These open the identity provider; you come back here afterwards.</p><ul>${links}</ul>`
    : '<h2>Security</h2><p class="muted" data-testid="account-no-hand-offs">Manage your password and sign-in methods at your identity provider.</p>';
  return hostedPage(
    'Your account',
    `${STYLE}<h1 data-testid="hosted-heading">Your account</h1>
<dl>
<dt>Name</dt><dd data-testid="account-name">${escapeHtml(me.user.name)}</dd>
<dt>Email</dt><dd data-testid="account-email">${escapeHtml(me.user.email)}</dd>
<dt>Workspace</dt><dd>${workspace}</dd>
<dt>Platform admin</dt><dd data-testid="account-platform-admin">${me.isPlatformAdmin ? '<span class="badge">Yes</span>' : 'No'}</dd>
</dl>
<h2>Memberships</h2>${memberships}${pending}
${security}
<a class="button" href="/auth/console/" data-testid="account-console">Open the console</a>
<form method="post" action="/auth/logout"><button type="submit" class="button secondary" data-testid="sign-out">Sign out</button></form>`,
  );
}

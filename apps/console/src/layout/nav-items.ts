/**
 * The left navigation, in display order. `path` is relative to the router basename. Items of one
 * `section` come together, last, under the section's heading.
 */
export const NAV_ITEMS = [
  { id: 'overview', label: 'Overview', path: '/' },
  { id: 'applications', label: 'Applications', path: '/applications' },
  // Members and invitations, a tab each.
  { id: 'people', label: 'People', path: '/people' },
  { id: 'users', label: 'Users', path: '/users' },
  { id: 'sessions', label: 'Sessions', path: '/sessions' },
  { id: 'roles', label: 'Roles', path: '/roles' },
  { id: 'email-deliveries', label: 'Email deliveries', path: '/email-deliveries' },
  { id: 'api-keys', label: 'API keys', path: '/api-keys' },
  { id: 'webhooks', label: 'Webhooks', path: '/webhooks' },
  { id: 'webhook-deliveries', label: 'Webhook deliveries', path: '/webhook-deliveries' },
  { id: 'usage', label: 'Usage', path: '/usage' },
  { id: 'billing', label: 'Billing', path: '/billing' },
  { id: 'subscription', label: 'Subscription', path: '/subscription' },
  { id: 'plans', label: 'Plans', path: '/plans' },
  { id: 'audit-log', label: 'Audit log', path: '/audit-log' },
  { id: 'exports', label: 'Exports', path: '/exports' },
  { id: 'settings', label: 'Settings', path: '/settings' },
  // Organization settings -> Domains (docs/enterprise.md "Domains").
  { id: 'domains', label: 'Domains', path: '/settings/domains' },
  // Organization settings -> Directory sync: SCIM directories (docs/enterprise.md "Directory sync").
  { id: 'directory-sync', label: 'Directory sync', path: '/settings/directory-sync' },
  // Organization settings -> SSO connections (docs/enterprise.md "SSO connections").
  { id: 'sso-connections', label: 'SSO connections', path: '/settings/sso-connections' },
  // Organization settings -> Setup links: the customer's IT admin sets up SSO, SCIM or a domain (docs/enterprise.md "Setup links").
  { id: 'setup-links', label: 'Setup links', path: '/settings/setup-links' },
  // Which third-party apps and agents may act for the organization's people (docs/oidc.md).
  { id: 'third-party-access', label: 'Third-party access', path: '/settings/third-party-access' },
  { id: 'organizations', label: 'Organizations', path: '/organizations', platformOnly: true },
  { id: 'job-queue', label: 'Job queue', path: '/job-queue', platformOnly: true },
  // Clients that registered themselves (docs/oidc.md "Dynamic client registration").
  { id: 'registered-clients', label: 'Registered clients', path: '/registered-clients', platformOnly: true },
  // The product's catalog (docs/authorization.md): platform admins change it; whoever holds
  // roles.read reads it, since custom roles are built from it.
  { id: 'api-resources', label: 'API resources', path: '/authorization/resources', section: 'Authorization' },
  { id: 'product-roles', label: 'Product roles', path: '/authorization/product-roles', section: 'Authorization' },
] as const;

export type NavItem = (typeof NAV_ITEMS)[number];

/**
 * The items this user sees: platform-only pages are hidden from everyone else. Hiding is only
 * tidiness; the API refuses their calls (403) whatever the console shows.
 */
export function visibleNavItems(isPlatformAdmin: boolean): NavItem[] {
  return NAV_ITEMS.filter((item) => isPlatformAdmin || !('platformOnly' in item && item.platformOnly));
}

/** The visible items in display order, runs of one section together: `section` null for the plain ones. */
export function navGroups(items: readonly NavItem[]): { section: string | null; items: NavItem[] }[] {
  const groups: { section: string | null; items: NavItem[] }[] = [];
  for (const item of items) {
    const section = 'section' in item ? item.section : null;
    const last = groups.at(-1);
    if (last && last.section === section) {
      last.items.push(item);
    } else {
      groups.push({ section, items: [item] });
    }
  }
  return groups;
}

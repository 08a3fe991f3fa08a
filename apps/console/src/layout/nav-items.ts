/** The left navigation, in display order. `path` is relative to the router basename. */
export const NAV_ITEMS = [
  { id: 'overview', label: 'Overview', path: '/' },
  { id: 'applications', label: 'Applications', path: '/applications' },
  { id: 'members', label: 'Members', path: '/members' },
  { id: 'users', label: 'Users', path: '/users' },
  { id: 'sessions', label: 'Sessions', path: '/sessions' },
  { id: 'roles', label: 'Roles', path: '/roles' },
  { id: 'invitations', label: 'Invitations', path: '/invitations' },
  { id: 'api-keys', label: 'API keys', path: '/api-keys' },
  { id: 'audit-log', label: 'Audit log', path: '/audit-log' },
  { id: 'settings', label: 'Settings', path: '/settings' },
] as const;

export type NavItem = (typeof NAV_ITEMS)[number];

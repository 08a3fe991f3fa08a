import { isAdminOnlyPermission, PERMISSION_CATALOG } from '@svc/contracts/permissions';
import type { PermissionGroup } from '../../components/permission-groups.tsx';

/** What each resource of svc's catalog is called in the picker. */
const RESOURCE_NAMES: Record<string, string> = {
  tenant: 'Organization',
  members: 'Members',
  users: 'Users',
  sessions: 'Sessions',
  roles: 'Roles',
  invitations: 'Invitations',
  api_keys: 'API keys',
  usage: 'Usage',
  billing: 'Billing',
  exports: 'Exports',
  webhooks: 'Webhooks',
  email: 'Email',
  subscription: 'Subscription',
  audit: 'Audit log',
  applications: 'Applications',
};

/**
 * svc's control-plane catalog by resource (`members.read` under Members), in the catalog's order;
 * admin-only permissions say so.
 */
export const CONSOLE_PERMISSION_GROUPS: PermissionGroup[] = PERMISSION_CATALOG.reduce<PermissionGroup[]>((groups, permission) => {
  const resource = permission.name.slice(0, permission.name.indexOf('.'));
  const choice = {
    name: permission.name,
    description: permission.description,
    note: isAdminOnlyPermission(permission.name) ? '(org admins only)' : undefined,
  };
  const group = groups.find((g) => g.id === resource);
  if (group) {
    group.permissions.push(choice);
  } else {
    groups.push({ id: resource, name: RESOURCE_NAMES[resource] ?? resource, permissions: [choice] });
  }
  return groups;
}, []);

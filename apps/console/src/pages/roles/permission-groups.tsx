import { isAdminOnlyPermission, PERMISSION_CATALOG, type Permission } from '@svc/contracts/permissions';
import type { UseFormRegisterReturn } from 'react-hook-form';
import { FieldSet } from '../../components/field.tsx';

/** What each resource of the catalog is called in the picker. */
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

type Group = { resource: string; name: string; permissions: typeof PERMISSION_CATALOG };

/** The catalog by resource (`members.read` under Members), in the catalog's order. */
const GROUPS: Group[] = PERMISSION_CATALOG.reduce<Group[]>((groups, permission) => {
  const resource = permission.name.slice(0, permission.name.indexOf('.'));
  const group = groups.find((g) => g.resource === resource);
  if (group) {
    group.permissions.push(permission);
  } else {
    groups.push({ resource, name: RESOURCE_NAMES[resource] ?? resource, permissions: [permission] });
  }
  return groups;
}, []);

type PermissionGroupsProps = {
  /** `form.register('permissions')`: one checkbox per permission, the checked values an array. */
  field: UseFormRegisterReturn;
  /** The chosen permissions (`form.watch('permissions')`): what each group's "all" box shows. */
  value: readonly Permission[];
  /** Replaces the chosen permissions (`form.setValue('permissions', …)`): a group's "all" box. */
  onChange: (next: Permission[]) => void;
  error?: string;
  /** `<testId>-<permission>` on each checkbox, `<testId>-group-<resource>` on each group's box. */
  testId: string;
};

/**
 * The permission catalog as checkboxes, grouped by resource; each group's first box checks or
 * clears the whole group (mixed while some are checked). Admin-only permissions say so.
 */
export function PermissionGroups({ field, value, onChange, error, testId }: PermissionGroupsProps) {
  return (
    <FieldSet legend="Permissions" error={error} testId={testId}>
      <div className="permission-groups">
        {GROUPS.map((group) => {
          const names = group.permissions.map((p) => p.name);
          const checked = names.filter((name) => value.includes(name)).length;
          return (
            <fieldset key={group.resource} className="permission-group" aria-label={group.name}>
              <label className="check permission-group__head">
                <input
                  type="checkbox"
                  checked={checked === names.length}
                  // Mixed while some of the group are checked: a DOM property, set on each render.
                  ref={(box) => {
                    if (box) {
                      box.indeterminate = checked > 0 && checked < names.length;
                    }
                  }}
                  aria-label={`All ${group.name} permissions`}
                  data-testid={`${testId}-group-${group.resource}`}
                  onChange={(event) =>
                    onChange(event.target.checked ? [...new Set([...value, ...names])] : value.filter((name) => !names.includes(name)))
                  }
                />
                <span>{group.name}</span>
              </label>
              {group.permissions.map((permission) => (
                <label key={permission.name} className="check" title={permission.description}>
                  <input type="checkbox" value={permission.name} data-testid={`${testId}-${permission.name}`} {...field} />
                  <span>
                    <code>{permission.name}</code>{' '}
                    <span className="muted">
                      {permission.description}
                      {isAdminOnlyPermission(permission.name) && ' (org admins only)'}
                    </span>
                  </span>
                </label>
              ))}
            </fieldset>
          );
        })}
      </div>
    </FieldSet>
  );
}

import type { ReactNode } from 'react';
import { ErrorPanel } from './error-panel.tsx';
import { FieldSet } from './field.tsx';
import { Skeleton } from './skeleton.tsx';

/** One permission in a picker: its name, what it allows, and why it cannot be picked, if it cannot. */
export type PermissionChoice = {
  name: string;
  description: string;
  /** Said after the description: "(org admins only)". */
  note?: string;
  /** Shown but not changeable (a permission the admin may not hand out): its box keeps its state. */
  disabled?: boolean;
};

/** A heading of the picker (a resource of svc's catalog, an API of the product) and its permissions. */
export type PermissionGroup = {
  /** Stable and unique in the picker: `<testId>-group-<id>` on the group's box. */
  id: string;
  name: string;
  /** The heading's tooltip (an API's identifier). */
  title?: string;
  permissions: PermissionChoice[];
};

type PermissionGroupsProps = {
  /** Names the whole picker: which catalog it is. */
  legend: ReactNode;
  /** One line under the legend: what these permissions are for. */
  hint?: ReactNode;
  groups: PermissionGroup[];
  /** The chosen permissions (`form.watch('permissions')`). */
  value: readonly string[];
  /** Replaces the chosen permissions (`form.setValue('permissions', …)`): a box, or a group's "all" box. */
  onChange: (next: string[]) => void;
  error?: string;
  /** While the groups load (a catalog read from the api): a skeleton instead of the groups. */
  loading?: boolean;
  /** The catalog could not be read: the error instead of the groups. */
  loadError?: unknown;
  /** Said when there are no groups at all: where permissions come from. */
  empty?: ReactNode;
  /**
   * On the fieldset; `<testId>-<permission>` on each box, `<testId>-group-<group id>` on each
   * group's box.
   */
  testId: string;
};

/**
 * A permission catalog as checkboxes, grouped under headings; each group's first box checks or
 * clears what can be changed in the group (mixed while some are checked). svc's own catalog and the
 * product's (grouped by API resource) both use it, in the role editors.
 */
export function PermissionGroups({
  legend,
  hint,
  groups,
  value,
  onChange,
  error,
  loading = false,
  loadError,
  empty,
  testId,
}: PermissionGroupsProps) {
  const toggle = (name: string, on: boolean) => onChange(on ? [...new Set([...value, name])] : value.filter((v) => v !== name));
  return (
    <FieldSet legend={legend} error={error} testId={testId}>
      {hint && <p className="field__hint">{hint}</p>}
      {loading ? (
        <Skeleton label="Loading the permissions…" lines={3} testId={`${testId}-loading`} />
      ) : loadError !== undefined && loadError !== null ? (
        <ErrorPanel error={loadError} title="Could not load the permissions" />
      ) : groups.length === 0 ? (
        <p className="muted" data-testid={`${testId}-none`}>
          {empty ?? 'No permissions to choose from.'}
        </p>
      ) : (
        <div className="permission-groups">
          {groups.map((group) => {
            // The group's box changes only what may be changed; the others keep their state.
            const open = group.permissions.filter((p) => !p.disabled).map((p) => p.name);
            const checked = open.filter((name) => value.includes(name)).length;
            return (
              <fieldset key={group.id} className="permission-group" aria-label={group.name}>
                <label className="check permission-group__head" title={group.title}>
                  <input
                    type="checkbox"
                    checked={open.length > 0 && checked === open.length}
                    disabled={open.length === 0}
                    // Mixed while some of the group are checked: a DOM property, set on each render.
                    ref={(box) => {
                      if (box) {
                        box.indeterminate = checked > 0 && checked < open.length;
                      }
                    }}
                    aria-label={`All ${group.name} permissions`}
                    data-testid={`${testId}-group-${group.id}`}
                    onChange={(event) =>
                      onChange(event.target.checked ? [...new Set([...value, ...open])] : value.filter((name) => !open.includes(name)))
                    }
                  />
                  <span className="permission-group__name">{group.name}</span>
                </label>
                {group.permissions.map((permission) => (
                  <label
                    key={permission.name}
                    className={permission.disabled ? 'check check--disabled' : 'check'}
                    title={permission.description || undefined}
                  >
                    <input
                      type="checkbox"
                      value={permission.name}
                      checked={value.includes(permission.name)}
                      disabled={permission.disabled}
                      onChange={(event) => toggle(permission.name, event.target.checked)}
                      data-testid={`${testId}-${permission.name}`}
                    />
                    <span className="permission-choice">
                      <code>{permission.name}</code>{' '}
                      <span className="muted">
                        {permission.description}
                        {permission.note && ` ${permission.note}`}
                      </span>
                    </span>
                  </label>
                ))}
              </fieldset>
            );
          })}
        </div>
      )}
    </FieldSet>
  );
}

import { zodResolver } from '@hookform/resolvers/zod';
import type { Permission } from '@svc/contracts/permissions';
import { type TRole, ZCreateRoleRequest, ZUpdateRoleRequest } from '@svc/contracts/roles';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { toast } from 'sonner';
import { actionsColumn, columnHelper } from '../../components/data-table.tsx';
import { dialogMutation, FormDialog } from '../../components/dialog.tsx';
import { Field } from '../../components/field.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { PermissionGroups } from '../../components/permission-groups.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { parseError } from '../../lib/errors.ts';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';
import { CONSOLE_PERMISSION_GROUPS } from './console-permission-groups.ts';

const PAGE_SIZE = 50;

/**
 * The columns: the name (with a System badge) takes what the sized ones leave; the key is what
 * memberships and invitations name, so it is an Identifier; the permissions as chips.
 */
function roleColumns(organizationSlug: () => string, edit: (role: TRole) => void) {
  const column = columnHelper<TRole>();
  return column.columns([
    column.accessor('name', {
      header: 'Role',
      sortFn: 'text',
      cell: (info) => {
        const role = info.row.original;
        return (
          <span title={role.name}>
            <span data-testid="role-name">{role.name}</span>{' '}
            {role.system && (
              <span className="badge" data-testid="role-system" title="Built in: every organization has it, and it cannot be changed">
                System
              </span>
            )}
          </span>
        );
      },
    }),
    column.accessor('key', {
      header: 'Key',
      sortFn: 'text',
      meta: { width: '11rem', description: 'What memberships and invitations name' },
      cell: (info) => <Identifier value={info.getValue()} label="role key" testId="role-key" />,
    }),
    column.accessor((role) => role.permissions.join(' '), {
      id: 'permissions',
      header: 'Permissions',
      enableSorting: false,
      meta: { width: '40%' },
      cell: (info) => {
        const permissions = info.row.original.permissions;
        return permissions.length === 0 ? (
          <span className="muted" data-testid="role-permissions">
            none
          </span>
        ) : (
          <span className="chips" data-testid="role-permissions" title={permissions.join(', ')}>
            {permissions.map((permission) => (
              <code key={permission}>{permission}</code>
            ))}
          </span>
        );
      },
    }),
    // Built-in roles cannot be changed: no menu.
    actionsColumn(column, (role) => (role.system ? null : <RoleActions role={role} organizationSlug={organizationSlug()} onEdit={edit} />)),
  ]);
}

/**
 * Roles of the active organization: the two built-in ones (read-only) and custom roles made of
 * permissions from the catalog, created and edited in dialogs and deleted from their menu. Changing them needs the org
 * admin role; the API says no otherwise, and the dialog shows why.
 */
export function RolesPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const pager = usePager();
  const slug = active.organization?.slug;
  const roles = useQuery({
    ...trpc.roles.list.queryOptions({ organization_slug: slug, limit: PAGE_SIZE, cursor: pager.cursor }, { enabled: slug !== undefined }),
    placeholderData: keepPreviousData,
  });
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<TRole | null>(null);
  // One definition for the page's lifetime: the handlers only read a state setter and a ref.
  const [slugRef] = useState(() => ({ current: '' }));
  slugRef.current = slug ?? '';
  const [columns] = useState(() => roleColumns(() => slugRef.current, setEditing));

  return (
    <div data-testid="page-roles">
      <PageHeader
        title="Roles"
        description={`Named sets of permissions for members of ${active.organization ? active.organization.name : 'this workspace'}. System roles cannot be changed.`}
        actions={slug && <CreateRoleDialog slug={slug} open={creating} onOpenChange={setCreating} onCreated={pager.reset} />}
      />
      {slug && editing && <EditRoleDialog key={editing.id} role={editing} slug={slug} onClose={() => setEditing(null)} />}
      <ListPage
        testId="roles"
        noun="roles"
        workspace={active}
        query={roles}
        pager={pager}
        empty={{
          title: 'No roles.',
          next: 'Create a custom role from the permission catalog.',
          action: { label: 'Create role', onClick: () => setCreating(true) },
        }}
        rowKey={(role) => role.id}
        table={{
          columns,
          rowAttributes: (role) => ({ 'data-testid': 'role-row', 'data-role-key': role.key, 'data-system': String(role.system) }),
          minWidth: '56rem',
        }}
      />
    </div>
  );
}

function useInvalidateRoles() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return () => queryClient.invalidateQueries({ queryKey: trpc.roles.list.pathKey() });
}

/**
 * A custom role's "⋯" menu: Edit…, then (separated) Delete…, confirmed by typing the role's name.
 * A role still held by members or pending invitations is refused (role_in_use): the API's message,
 * saying how many hold it, shows as an error toast, since the way out is on other pages.
 */
function RoleActions({ role, organizationSlug, onEdit }: { role: TRole; organizationSlug: string; onEdit: (role: TRole) => void }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateRoles();
  const remove = useMutation(trpc.roles.delete.mutationOptions({ onSuccess: invalidate }));
  const deleteRole = async () => {
    try {
      await remove.mutateAsync({ id: role.id, organization_slug: organizationSlug });
      toast.success(`Deleted the role ${role.name}`);
    } catch (error) {
      const parsed = parseError(error);
      if (parsed.code !== 'role_in_use') {
        throw error;
      }
      toast.error(`Could not delete the role ${role.name}: ${parsed.message}`);
    }
  };
  return (
    <RowActions
      name={role.name}
      testId="role-actions"
      actions={[
        { label: 'Edit…', testId: 'role-edit', onSelect: () => onEdit(role) },
        {
          label: 'Delete…',
          testId: 'role-delete',
          destructive: true,
          confirm: {
            title: `Delete the role ${role.name}?`,
            consequence: (
              <>
                The role <code>{role.key}</code> is removed from the organization. Only a role that no member or pending invitation holds
                can be deleted. This cannot be undone.
              </>
            ),
            confirmLabel: 'Delete role',
            typeToConfirm: role.name,
            testId: 'role-delete-dialog',
            onConfirm: deleteRole,
          },
        },
      ]}
    />
  );
}

type CreateRoleDialogProps = { slug: string; open: boolean; onOpenChange: (open: boolean) => void; onCreated: () => void };

/** "Create role" (the header's primary button): key, name, permissions from the catalog. */
function CreateRoleDialog({ slug, open, onOpenChange, onCreated }: CreateRoleDialogProps) {
  const trpc = useTRPC();
  const invalidate = useInvalidateRoles();
  const empty = { organization_slug: slug, key: '', name: '', permissions: [] as Permission[], productPermissions: [] as string[] };
  const form = useForm({ resolver: zodResolver(ZCreateRoleRequest), defaultValues: empty });
  const errors = form.formState.errors;
  const create = useMutation(trpc.roles.create.mutationOptions());
  const { close, settle } = dialogMutation({ onOpenChange, forget: () => form.reset(empty), mutation: create });
  const submit = form.handleSubmit(async (values) => {
    const created = await settle(create.mutateAsync({ ...values, organization_slug: slug }));
    if (created) {
      toast.success(`Created the role ${created.name}`);
      onCreated();
      await invalidate();
    }
  });

  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={
        <button type="button" className="button button--primary" data-testid="roles-create-open">
          Create role
        </button>
      }
      title="Create role"
      description="A custom role is a named set of permissions from the catalog; give it to members and invitations by its key."
      wide
      onSubmit={submit}
      submitLabel="Create role"
      pending={create.isPending}
      pendingLabel="Creating…"
      error={create.error}
      errorTitle="Could not create the role"
      testId="roles-create"
    >
      <div className="form-grid">
        <Field
          label="Key"
          error={errors.key?.message}
          hint="Lower-case letters, digits and _; it cannot be changed later."
          testId="roles-create-key"
        >
          {(control) => (
            <input {...control} autoComplete="off" placeholder="support_agent" data-testid="roles-create-key" {...form.register('key')} />
          )}
        </Field>
        <Field label="Name" error={errors.name?.message} hint="What people see: “Support agent”." testId="roles-create-name">
          {(control) => (
            <input {...control} autoComplete="off" placeholder="Support agent" data-testid="roles-create-name" {...form.register('name')} />
          )}
        </Field>
      </div>
      <PermissionGroups
        legend="Permissions"
        groups={CONSOLE_PERMISSION_GROUPS}
        value={form.watch('permissions')}
        onChange={(next) =>
          form.setValue('permissions', next as Permission[], { shouldDirty: true, shouldValidate: form.formState.isSubmitted })
        }
        error={errors.permissions?.message}
        testId="roles-create-permission"
      />
    </FormDialog>
  );
}

/** "Edit…" from a custom role's menu: its name and permissions (the key stays). */
function EditRoleDialog({ role, slug, onClose }: { role: TRole; slug: string; onClose: () => void }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateRoles();
  const form = useForm({
    resolver: zodResolver(ZUpdateRoleRequest),
    defaultValues: { id: role.id, organization_slug: slug, name: role.name, permissions: [...role.permissions] },
  });
  const errors = form.formState.errors;
  const update = useMutation(trpc.roles.update.mutationOptions());
  const submit = form.handleSubmit(async (values) => {
    const updated = await update.mutateAsync({ ...values, id: role.id, organization_slug: slug }).catch(() => undefined);
    if (updated) {
      await invalidate();
      onClose();
    }
  });

  return (
    <FormDialog
      open
      onOpenChange={(next) => !next && onClose()}
      title={`Edit the role ${role.name}`}
      description={
        <>
          Its name and permissions; the key <code>{role.key}</code> stays, so members and invitations keep the role.
        </>
      }
      wide
      onSubmit={submit}
      submitLabel="Save role"
      pending={update.isPending}
      error={update.error}
      errorTitle="Could not update the role"
      testId="role-edit-dialog"
    >
      <Field label="Name" error={errors.name?.message} testId="role-edit-name">
        {(control) => <input {...control} autoComplete="off" data-testid="role-edit-name" {...form.register('name')} />}
      </Field>
      <PermissionGroups
        legend="Permissions"
        groups={CONSOLE_PERMISSION_GROUPS}
        value={form.watch('permissions') ?? []}
        onChange={(next) =>
          form.setValue('permissions', next as Permission[], { shouldDirty: true, shouldValidate: form.formState.isSubmitted })
        }
        error={errors.permissions?.message}
        testId="role-edit-permission"
      />
    </FormDialog>
  );
}

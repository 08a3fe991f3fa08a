import { zodResolver } from '@hookform/resolvers/zod';
import type { Permission } from '@svc/contracts/permissions';
import { type TRole, type TRoleKind, ZCreateRoleRequest, ZUpdateRoleRequest } from '@svc/contracts/roles';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { Link, useParams } from 'react-router';
import { toast } from 'sonner';
import { Chips } from '../../components/chips.tsx';
import { actionsColumn, columnHelper } from '../../components/data-table.tsx';
import { dialogMutation, FormDialog } from '../../components/dialog.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Field } from '../../components/field.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { PermissionGroups } from '../../components/permission-groups.tsx';
import { ProductPermissionPicker } from '../../components/product-permission-picker.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { parseError } from '../../lib/errors.ts';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useHeldProductPermissions } from '../../lib/product-catalog.ts';
import { useTRPC } from '../../trpc.ts';
import { CONSOLE_PERMISSION_GROUPS } from './console-permission-groups.ts';

const PAGE_SIZE = 50;

/** A role's own page in the console, by its key (what memberships and invitations name). */
export const rolePath = (key: string) => `/roles/${encodeURIComponent(key)}`;

/** What each kind of role is called, and what it means (the badge's tooltip). */
const KINDS: Record<TRoleKind, { label: string; title: string }> = {
  system: { label: 'System', title: 'Built in: every organization has it, and it cannot be changed' },
  product: {
    label: 'Product',
    title: "One of the product's roles: the platform defines it for every organization; assign it, it cannot be changed here",
  },
  custom: { label: 'Custom', title: "This organization's own role: change or delete it from its menu" },
};

/** Permission names as one line of chips, then "+N more", or "none". */
function PermissionChips({ names, testId }: { names: readonly string[]; testId: string }) {
  return <Chips names={names} testId={testId} />;
}

/**
 * The columns: the name takes what the sized ones leave; the kind (system, product, custom); the
 * key is what memberships and invitations name, so it is an Identifier; then the two catalogs'
 * permissions as chips: svc's console and the product's.
 */
function roleColumns(organizationSlug: () => string, edit: (role: TRole) => void) {
  const column = columnHelper<TRole>();
  return column.columns([
    column.accessor('name', {
      header: 'Role',
      sortFn: 'text',
      cell: (info) => (
        // The name opens the role's own page, /roles/<key>: every permission, none cut.
        <Link to={rolePath(info.row.original.key)} title={info.getValue()} data-testid="role-name">
          {info.getValue()}
        </Link>
      ),
    }),
    column.accessor('kind', {
      header: 'Kind',
      sortFn: 'text',
      meta: { width: '6.5rem' },
      cell: (info) => {
        const kind = KINDS[info.getValue()];
        return (
          <span className="badge" data-testid={`role-${info.getValue()}`} title={kind.title}>
            {kind.label}
          </span>
        );
      },
    }),
    column.accessor('key', {
      header: 'Key',
      sortFn: 'text',
      meta: { width: '13rem', description: 'What memberships and invitations name' },
      cell: (info) => <Identifier value={info.getValue()} label="role key" testId="role-key" />,
    }),
    column.accessor((role) => role.permissions.join(' '), {
      id: 'permissions',
      header: 'Console permissions',
      enableSorting: false,
      meta: { width: '25%', description: 'What holders may see and manage in this svc console' },
      cell: (info) => <PermissionChips names={info.row.original.permissions} testId="role-permissions" />,
    }),
    column.accessor((role) => role.productPermissions.join(' '), {
      id: 'productPermissions',
      header: 'Product permissions',
      enableSorting: false,
      meta: { width: '20%', description: "What holders may do in the product's APIs: their tokens and the check API carry these" },
      cell: (info) => <PermissionChips names={info.row.original.productPermissions} testId="role-product-permissions" />,
    }),
    // System and product roles cannot be changed here: no menu.
    actionsColumn(column, (role) =>
      role.kind === 'custom' ? <RoleActions role={role} organizationSlug={organizationSlug()} onEdit={edit} /> : null,
    ),
  ]);
}

/**
 * Roles of the active organization: the two built-in ones and the product's roles (both assigned,
 * never changed here), and custom roles made of permissions from two catalogs, svc's console and
 * the product's, created and edited in dialogs and deleted from their menu. Changing them needs
 * the org admin role; the API says no otherwise, and the dialog shows why.
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
  const selected = useParams().key ?? null;

  return (
    <div data-testid="page-roles">
      <PageHeader
        title="Roles"
        description={`Named sets of permissions for members of ${active.organization ? active.organization.name : 'this workspace'}, in this console and in your product. System and product roles cannot be changed here.`}
        actions={slug && <CreateRoleDialog slug={slug} open={creating} onOpenChange={setCreating} onCreated={pager.reset} />}
      />
      {slug && editing && <EditRoleDialog key={editing.id} role={editing} slug={slug} onClose={() => setEditing(null)} />}
      {selected ? (
        <RoleDetail roleKey={selected} slug={slug} workspace={active} onEdit={setEditing} />
      ) : (
        <ListPage
          testId="roles"
          noun="roles"
          workspace={active}
          query={roles}
          pager={pager}
          empty={{
            title: 'No roles.',
            next: 'Create a custom role from the permission catalogs.',
            action: { label: 'Create role', onClick: () => setCreating(true) },
          }}
          rowKey={(role) => role.id}
          table={{
            columns,
            rowAttributes: (role) => ({
              'data-testid': 'role-row',
              'data-role-key': role.key,
              'data-system': String(role.system),
              'data-kind': role.kind,
            }),
            minWidth: '62rem',
          }}
        />
      )}
    </div>
  );
}

/**
 * One role on its own page (/roles/<key>): its kind, key and id, and every permission of both
 * catalogs, one a line. Roles are few (the built-in two, the product's and the organization's
 * own), so the page reads them in one list call and picks the role by its key.
 */
function RoleDetail({
  roleKey,
  slug,
  workspace,
  onEdit,
}: {
  roleKey: string;
  slug: string | undefined;
  workspace: ReturnType<typeof useActiveOrganization>;
  onEdit: (role: TRole) => void;
}) {
  const trpc = useTRPC();
  const roles = useQuery(trpc.roles.list.queryOptions({ organization_slug: slug, limit: 200 }, { enabled: slug !== undefined }));
  const role = roles.data?.data.find((r) => r.key === roleKey);
  return (
    <>
      <p className="breadcrumb">
        <Link to="/roles" data-testid="role-detail-back">
          ← Roles
        </Link>
      </p>
      {workspace.error && <ErrorPanel error={workspace.error} title="Could not load your workspace" />}
      {roles.isError && <ErrorPanel error={roles.error} title="Could not load the role" onRetry={() => void roles.refetch()} />}
      {(workspace.isLoading || (slug !== undefined && roles.isPending)) && !roles.isError && (
        <Skeleton label="Loading the role…" testId="role-detail-loading" />
      )}
      {roles.data && !role && (
        <p className="muted" data-testid="role-detail-missing">
          No role with the key <code>{roleKey}</code> in this organization.
        </p>
      )}
      {role && (
        <section className="panel" data-testid="role-detail" data-role-key={role.key}>
          <div className="panel__header">
            <h2 className="panel__title">{role.name}</h2>
            <div className="panel__actions">
              {role.kind === 'custom' && slug && (
                <>
                  <button type="button" className="button" onClick={() => onEdit(role)} data-testid="role-detail-edit">
                    Edit role
                  </button>
                  <RoleActions role={role} organizationSlug={slug} onEdit={onEdit} />
                </>
              )}
            </div>
          </div>
          <dl className="facts">
            <dt>Kind</dt>
            <dd data-testid="role-detail-kind">
              <span className="badge">{KINDS[role.kind].label}</span> <span className="muted">{KINDS[role.kind].title}</span>
            </dd>
            <dt>Key</dt>
            <dd>
              <Identifier value={role.key} label="role key" testId="role-detail-key" />
            </dd>
            <dt>ID</dt>
            <dd>
              <Identifier value={role.id} label="role id" testId="role-detail-id" />
            </dd>
            <dt>Console permissions</dt>
            <dd>
              <PermissionList names={role.permissions} testId="role-detail-permissions" />
            </dd>
            <dt>Product permissions</dt>
            <dd>
              <PermissionList names={role.productPermissions} testId="role-detail-product-permissions" />
            </dd>
            <dt>Changed</dt>
            <dd>
              <When at={role.updatedAt} empty="never (built in)" />
            </dd>
          </dl>
        </section>
      )}
    </>
  );
}

/** Every permission, one a line, or "none". */
function PermissionList({ names, testId }: { names: readonly string[]; testId: string }) {
  if (names.length === 0) {
    return (
      <span className="muted" data-testid={testId}>
        none
      </span>
    );
  }
  return (
    <ul className="url-list" data-testid={testId}>
      {names.map((name) => (
        <li key={name}>
          <code>{name}</code>
        </li>
      ))}
    </ul>
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

/**
 * Which product permissions the signed-in admin may put in a role: those they hold (a platform
 * admin, all); the others show disabled. Undefined while that is not known: the API decides.
 */
function useGrantable(slug: string): ((name: string) => boolean) | undefined {
  const held = useHeldProductPermissions(slug);
  return held === undefined || held === 'all' ? undefined : (name) => held.has(name);
}

const CONSOLE_HINT = 'What holders may see and manage in this svc console: members, keys, webhooks, billing.';
const PRODUCT_HINT = "What holders may do in your product's APIs: their tokens and the check API carry these, never the console's.";

type CreateRoleDialogProps = { slug: string; open: boolean; onOpenChange: (open: boolean) => void; onCreated: () => void };

/** "Create role" (the header's primary button): key, name, and permissions from both catalogs. */
function CreateRoleDialog({ slug, open, onOpenChange, onCreated }: CreateRoleDialogProps) {
  const trpc = useTRPC();
  const invalidate = useInvalidateRoles();
  const grantable = useGrantable(slug);
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
  const revalidate = { shouldDirty: true, shouldValidate: form.formState.isSubmitted };

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
      description="A custom role is a named set of permissions, in this console and in your product; give it to members and invitations by its key."
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
      <div className="form-stack">
        <ProductPermissionPicker
          slug={slug}
          hint={PRODUCT_HINT}
          value={form.watch('productPermissions') ?? []}
          onChange={(next) => form.setValue('productPermissions', next, revalidate)}
          error={errors.productPermissions?.message}
          grantable={grantable}
          testId="roles-create-product-permission"
        />
        <PermissionGroups
          legend="svc console permissions"
          hint={CONSOLE_HINT}
          groups={CONSOLE_PERMISSION_GROUPS}
          value={form.watch('permissions')}
          onChange={(next) => form.setValue('permissions', next as Permission[], revalidate)}
          error={errors.permissions?.message}
          testId="roles-create-permission"
        />
      </div>
    </FormDialog>
  );
}

/** "Edit…" from a custom role's menu: its name and both lists of permissions (the key stays). */
function EditRoleDialog({ role, slug, onClose }: { role: TRole; slug: string; onClose: () => void }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateRoles();
  const grantable = useGrantable(slug);
  const form = useForm({
    resolver: zodResolver(ZUpdateRoleRequest),
    defaultValues: {
      id: role.id,
      organization_slug: slug,
      name: role.name,
      permissions: [...role.permissions],
      productPermissions: [...role.productPermissions],
    },
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
  const revalidate = { shouldDirty: true, shouldValidate: form.formState.isSubmitted };

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
      <div className="form-stack">
        <ProductPermissionPicker
          slug={slug}
          hint={PRODUCT_HINT}
          value={form.watch('productPermissions') ?? []}
          onChange={(next) => form.setValue('productPermissions', next, revalidate)}
          error={errors.productPermissions?.message}
          grantable={grantable}
          testId="role-edit-product-permission"
        />
        <PermissionGroups
          legend="svc console permissions"
          hint={CONSOLE_HINT}
          groups={CONSOLE_PERMISSION_GROUPS}
          value={form.watch('permissions') ?? []}
          onChange={(next) => form.setValue('permissions', next as Permission[], revalidate)}
          error={errors.permissions?.message}
          testId="role-edit-permission"
        />
      </div>
    </FormDialog>
  );
}

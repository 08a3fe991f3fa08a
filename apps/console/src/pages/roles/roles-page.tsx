import { zodResolver } from '@hookform/resolvers/zod';
import { PERMISSION_CATALOG, type Permission } from '@svc/contracts/permissions';
import { type TRole, ZCreateRoleRequest, ZUpdateRoleRequest } from '@svc/contracts/roles';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { type FieldError, type UseFormRegisterReturn, useForm } from 'react-hook-form';
import { focusField } from '../../components/empty-state.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;
/** The create form's key field: the empty list's button takes the admin here. */
const KEY_FIELD_ID = 'roles-create-key';

/**
 * Roles of the active organization: the two built-in ones (read-only) and custom roles made of
 * permissions from the catalog. Creating and editing needs the org admin role; the API says no
 * otherwise, and the error panel shows why.
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
  const [editing, setEditing] = useState<string | null>(null);

  return (
    <div data-testid="page-roles">
      <PageHeader
        title="Roles"
        description={`Named sets of permissions for members of ${active.organization ? active.organization.name : 'this workspace'}. System roles cannot be changed.`}
      />
      <ListPage
        testId="roles"
        noun="roles"
        workspace={active}
        query={roles}
        pager={pager}
        empty={{
          title: 'No roles.',
          next: 'Create a custom role above from the permission catalog.',
          action: { label: 'Create a role', onClick: focusField(KEY_FIELD_ID) },
        }}
        above={(organization) => <CreateRoleForm slug={organization.slug} onCreated={pager.reset} />}
        columns={['Role', 'Key', 'Permissions', '']}
        rowKey={(role) => role.id}
        row={(role, organization) =>
          editing === role.id ? (
            <tr data-testid="role-row" data-role-key={role.key}>
              <td colSpan={4}>
                <EditRoleForm role={role} slug={organization.slug} onDone={() => setEditing(null)} />
              </td>
            </tr>
          ) : (
            <RoleRow role={role} onEdit={() => setEditing(role.id)} />
          )
        }
      />
    </div>
  );
}

function RoleRow({ role, onEdit }: { role: TRole; onEdit: () => void }) {
  return (
    <tr data-testid="role-row" data-role-key={role.key}>
      <td>
        <span data-testid="role-name">{role.name}</span>{' '}
        {role.system && (
          <span className="badge" data-testid="role-system">
            System
          </span>
        )}
      </td>
      <td>
        <code style={{ whiteSpace: 'nowrap' }}>{role.key}</code>
      </td>
      <td data-testid="role-permissions">
        {role.permissions.length === 0 ? (
          <span className="muted">none</span>
        ) : (
          role.permissions.map((p) => (
            <code key={p} style={{ display: 'inline-block', marginRight: 6 }}>
              {p}
            </code>
          ))
        )}
      </td>
      <td>
        {!role.system && (
          <button type="button" className="button" onClick={onEdit} data-testid="role-edit">
            Edit
          </button>
        )}
      </td>
    </tr>
  );
}

function useInvalidateRoles() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return () => queryClient.invalidateQueries({ queryKey: trpc.roles.list.queryKey() });
}

/** One checkbox per catalog permission, registered under one field (react-hook-form gives the checked values). */
function PermissionChecklist({ field, error, testId }: { field: UseFormRegisterReturn; error?: FieldError; testId: string }) {
  return (
    <fieldset className="form-field" data-testid={testId} style={{ border: 0, padding: 0, margin: 0 }}>
      <legend>Permissions</legend>
      <div style={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fill, minmax(240px, 1fr))', gap: '4px 16px' }}>
        {PERMISSION_CATALOG.map((p) => (
          <label key={p.name} title={p.description} style={{ display: 'flex', gap: 6, alignItems: 'center' }}>
            <input type="checkbox" value={p.name} data-testid={`${testId}-${p.name}`} {...field} />
            <code>{p.name}</code>
          </label>
        ))}
      </div>
      {error && <span className="form-field__error">{error.message}</span>}
    </fieldset>
  );
}

function CreateRoleForm({ slug, onCreated }: { slug: string; onCreated: () => void }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateRoles();
  const empty = { organization_slug: slug, key: '', name: '', permissions: [] as Permission[] };
  const form = useForm({ resolver: zodResolver(ZCreateRoleRequest), defaultValues: empty });
  const errors = form.formState.errors;
  const create = useMutation(
    trpc.roles.create.mutationOptions({
      onSuccess: async () => {
        form.reset(empty);
        onCreated();
        await invalidate();
      },
    }),
  );
  const submit = form.handleSubmit((values) => create.mutateAsync({ ...values, organization_slug: slug }).catch(() => undefined));

  return (
    <section className="panel" data-testid="roles-create">
      <h2 className="panel__title">Create a custom role</h2>
      <form onSubmit={submit} noValidate data-testid="roles-create-form">
        <div className="form-row">
          <label className="form-field">
            <span>Key</span>
            <input
              id={KEY_FIELD_ID}
              autoComplete="off"
              placeholder="support_agent"
              data-testid="roles-create-key"
              {...form.register('key')}
            />
            {errors.key && (
              <span className="form-field__error" data-testid="roles-create-key-error">
                {errors.key.message}
              </span>
            )}
          </label>
          <label className="form-field">
            <span>Name</span>
            <input autoComplete="off" placeholder="Support agent" data-testid="roles-create-name" {...form.register('name')} />
            {errors.name && <span className="form-field__error">{errors.name.message}</span>}
          </label>
        </div>
        <PermissionChecklist
          field={form.register('permissions')}
          error={errors.permissions as FieldError | undefined}
          testId="roles-create-permission"
        />
        <div className="form-row">
          <button type="submit" className="button button--primary" disabled={create.isPending} data-testid="roles-create-submit">
            {create.isPending ? 'Creating…' : 'Create role'}
          </button>
        </div>
      </form>
      {create.isSuccess && (
        <p className="muted" data-testid="roles-created">
          Created {create.data.name} ({create.data.key}).
        </p>
      )}
      {create.isError && <ErrorPanel error={create.error} title="Could not create the role" />}
    </section>
  );
}

function EditRoleForm({ role, slug, onDone }: { role: TRole; slug: string; onDone: () => void }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateRoles();
  const form = useForm({
    resolver: zodResolver(ZUpdateRoleRequest),
    defaultValues: { id: role.id, organization_slug: slug, name: role.name, permissions: [...role.permissions] },
  });
  const errors = form.formState.errors;
  const update = useMutation(
    trpc.roles.update.mutationOptions({
      onSuccess: async () => {
        await invalidate();
        onDone();
      },
    }),
  );
  const submit = form.handleSubmit((values) =>
    update.mutateAsync({ ...values, id: role.id, organization_slug: slug }).catch(() => undefined),
  );

  return (
    <form onSubmit={submit} noValidate data-testid="role-edit-form">
      <div className="form-row">
        <label className="form-field">
          <span>Name of {role.key}</span>
          <input autoComplete="off" data-testid="role-edit-name" {...form.register('name')} />
          {errors.name && <span className="form-field__error">{errors.name.message}</span>}
        </label>
      </div>
      <PermissionChecklist
        field={form.register('permissions')}
        error={errors.permissions as FieldError | undefined}
        testId="role-edit-permission"
      />
      <div className="form-row">
        <button type="submit" className="button button--primary" disabled={update.isPending} data-testid="role-edit-save">
          {update.isPending ? 'Saving…' : 'Save'}
        </button>
        <button type="button" className="button" onClick={onDone} data-testid="role-edit-cancel">
          Cancel
        </button>
      </div>
      {update.isError && <ErrorPanel error={update.error} title="Could not update the role" />}
    </form>
  );
}

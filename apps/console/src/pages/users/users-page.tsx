import { zodResolver } from '@hookform/resolvers/zod';
import { type TMembershipStatus, type TUser, ZCreateUserRequest } from '@svc/contracts/users';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type BaseSyntheticEvent, useState } from 'react';
import { Controller, useForm } from 'react-hook-form';
import { Link, useParams } from 'react-router';
import { actionsColumn, columnHelper, whenColumn } from '../../components/data-table.tsx';
import { dialogMutation, FormDialog } from '../../components/dialog.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Field } from '../../components/field.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { isPlatformWorkspace, ManagedMemberships } from '../../components/managed-memberships.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { roleColumn } from '../../components/person-columns.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { Select, type SelectOption } from '../../components/select.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { StatusFilter } from '../../components/status-filter.tsx';
import { When } from '../../components/when.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useRoleOptions } from '../../lib/roles.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;
const STATUSES: { value: TMembershipStatus; label: string }[] = [
  { value: 'invited', label: 'Invited' },
  { value: 'active', label: 'Active' },
  { value: 'suspended', label: 'Suspended' },
];

/** What a row needs besides its user: the organization, role names, and the page's dialogs. */
type RowContext = {
  slug: string;
  nameOf: (key: string) => string;
  changeRole: (user: TUser) => void;
  /** The platform workspace: its memberships are the engine's, so rows have no menu. */
  managed: boolean;
};

/** "Mia Member (mia@…)" or the email alone: how the menus and dialogs name the person. */
function personLabel(user: TUser): string {
  return user.name ? `${user.name} (${user.email})` : user.email;
}

function userColumns(context: () => RowContext) {
  const column = columnHelper<TUser>();
  return column.columns([
    column.accessor('email', {
      header: 'User',
      sortFn: 'text',
      cell: (info) => {
        const user = info.row.original;
        return (
          <div title={personLabel(user)}>
            {/* The name opens the user's own page, /users/<id>. */}
            <div>
              <Link to={`/users/${encodeURIComponent(user.id)}`} data-testid="user-name">
                {user.name || '(no name)'}
              </Link>
            </div>
            <div className="muted" data-testid="user-email">
              {user.email}
              {user.status !== 'invited' && !user.emailVerified && ' · email not verified'}
            </div>
          </div>
        );
      },
    }),
    column.accessor('status', {
      header: 'Status',
      sortFn: 'text',
      meta: { width: '7.5rem' },
      cell: (info) => (
        <span className={`pill ${info.getValue() === 'active' ? 'pill--on' : 'pill--off'}`} data-testid="user-status">
          {info.getValue()}
        </span>
      ),
    }),
    roleColumn<TUser>({ testId: 'user-role', nameOf: () => context().nameOf }),
    whenColumn(column, 'lastSignInAt', 'Last sign-in', {
      width: '10rem',
      empty: (user) => (user.status === 'invited' ? '—' : 'never'),
    }),
    actionsColumn(column, (user) => (context().managed ? null : <UserActions user={user} context={context()} />)),
  ]);
}

/**
 * The active organization's users: who they are, their membership's status and role here; add a
 * person (an invitation they accept when signed in), change a role, suspend the membership (they
 * lose this organization at once, and keep every other) or reactivate it, remove it. A person's
 * name is their own: it is not edited here.
 */
export function UsersPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const pager = usePager();
  const [status, setStatus] = useState<TMembershipStatus | ''>('');
  const [emailPrefix, setEmailPrefix] = useState('');
  const [creating, setCreating] = useState(false);
  const [changing, setChanging] = useState<TUser | null>(null);
  const slug = active.organization?.slug;
  const users = useQuery({
    ...trpc.users.list.queryOptions(
      {
        organization_slug: slug,
        limit: PAGE_SIZE,
        cursor: pager.cursor,
        ...(status ? { status } : {}),
        ...(emailPrefix.trim() ? { email: emailPrefix.trim() } : {}),
      },
      { enabled: slug !== undefined },
    ),
    placeholderData: keepPreviousData,
  });
  const roles = useRoleOptions(slug);
  // Columns are made once; the cells read the latest organization and role names through this.
  const managed = isPlatformWorkspace(active.organization);
  const selected = useParams().id ?? null;
  const context: RowContext = { slug: slug ?? '', nameOf: roles.nameOf, changeRole: setChanging, managed };
  const [latest] = useState(() => ({ current: context }));
  latest.current = context;
  const [columns] = useState(() => userColumns(() => latest.current));
  const filtered = status !== '' || emailPrefix.trim() !== '';
  const clearFilters = () => {
    setStatus('');
    setEmailPrefix('');
    pager.reset();
  };

  return (
    <div data-testid="page-users">
      <PageHeader
        title="Users"
        description={`People in ${active.organization ? active.organization.name : 'this workspace'}: their membership's status and role. Suspending a membership cuts their access to this organization at once.`}
        actions={
          slug &&
          !managed && (
            <CreateUserDialog slug={slug} roles={roles.options} open={creating} onOpenChange={setCreating} onCreated={pager.reset} />
          )
        }
      />
      {managed && <ManagedMemberships testId="users-managed" />}
      {slug && changing && <ChangeRoleDialog slug={slug} user={changing} roles={roles.options} onClose={() => setChanging(null)} />}
      {selected ? (
        <UserDetail id={selected} slug={slug} context={context} />
      ) : (
        <ListPage
          testId="users"
          noun="users"
          workspace={active}
          query={users}
          pager={pager}
          filtered={filtered ? { title: 'No users match.', clear: clearFilters } : undefined}
          empty={{
            title: 'No users yet.',
            next: 'Add a user: they join once they accept.',
            ...(managed ? {} : { action: { label: 'Add user', onClick: () => setCreating(true) } }),
          }}
          above={() => (
            <form className="form-row" data-testid="users-filters" onSubmit={(e) => e.preventDefault()}>
              <StatusFilter testId="users-filter-status" options={STATUSES} value={status} onChange={setStatus} pager={pager} />
              <label className="form-field">
                <span>Email starts with</span>
                <input
                  data-testid="users-filter-email"
                  value={emailPrefix}
                  maxLength={254}
                  onChange={(e) => {
                    setEmailPrefix(e.target.value);
                    pager.reset();
                  }}
                />
              </label>
            </form>
          )}
          rowKey={(user) => user.id}
          table={{
            columns,
            rowAttributes: (user) => ({
              'data-testid': 'user-row',
              'data-user-id': user.id,
              'data-email': user.email,
              'data-status': user.status,
            }),
            minWidth: '48rem',
          }}
        />
      )}
    </div>
  );
}

/**
 * One user on their own page (/users/<id>): who they are, their membership here (status, role,
 * when they joined and last signed in) and the same menu as their row.
 */
function UserDetail({ id, slug, context }: { id: string; slug: string | undefined; context: RowContext }) {
  const trpc = useTRPC();
  const user = useQuery(trpc.users.get.queryOptions({ id, organization_slug: slug }, { enabled: slug !== undefined }));
  const data = user.data;
  return (
    <>
      <p className="breadcrumb">
        <Link to="/users" data-testid="user-detail-back">
          ← Users
        </Link>
      </p>
      {user.isError && <ErrorPanel error={user.error} title="Could not load the user" onRetry={() => void user.refetch()} />}
      {(slug === undefined || user.isPending) && !user.isError && <Skeleton label="Loading the user…" testId="user-detail-loading" />}
      {data && (
        <section className="panel" data-testid="user-detail" data-user-id={data.id}>
          <div className="panel__header">
            <h2 className="panel__title">{data.name || data.email}</h2>
            <div className="panel__actions">{!context.managed && <UserActions user={data} context={context} />}</div>
          </div>
          <dl className="facts">
            <dt>Email</dt>
            <dd data-testid="user-detail-email">
              {data.email}
              {data.status !== 'invited' && !data.emailVerified && <span className="muted"> not verified</span>}
            </dd>
            <dt>User ID</dt>
            <dd>
              <Identifier value={data.id} label="user id" testId="user-detail-id" />
            </dd>
            <dt>Status here</dt>
            <dd>
              <span className={`pill ${data.status === 'active' ? 'pill--on' : 'pill--off'}`} data-testid="user-detail-status">
                {data.status}
              </span>
            </dd>
            <dt>Role here</dt>
            <dd data-testid="user-detail-role">
              {context.nameOf(data.roleKey)} <span className="muted">{data.roleKey}</span>
            </dd>
            <dt>Member since</dt>
            <dd>
              <When at={data.joinedAt} empty="—" />
            </dd>
            <dt>Last sign-in</dt>
            <dd>
              <When at={data.lastSignInAt} empty={data.status === 'invited' ? '— (invited)' : 'never'} />
            </dd>
          </dl>
        </section>
      )}
    </>
  );
}

function useInvalidateUsers() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return () =>
    Promise.all([
      // The list and a user's page.
      queryClient.invalidateQueries({ queryKey: trpc.users.pathKey() }),
      // Suspending ends sessions; the members page shows roles.
      queryClient.invalidateQueries({ queryKey: trpc.sessions.list.queryKey() }),
      queryClient.invalidateQueries({ queryKey: trpc.tenants.member.list.queryKey() }),
    ]);
}

type CreateUserDialogProps = {
  slug: string;
  roles: SelectOption<string>[];
  open: boolean;
  onOpenChange: (open: boolean) => void;
  onCreated: () => void;
};

/** "Add user" (the header's primary button): email, name, role; the person is invited. */
function CreateUserDialog({ slug, roles, open, onOpenChange, onCreated }: CreateUserDialogProps) {
  const trpc = useTRPC();
  const invalidate = useInvalidateUsers();
  const empty = { organization_slug: slug, email: '', name: undefined, roleKey: 'org_member' };
  const form = useForm({ resolver: zodResolver(ZCreateUserRequest), defaultValues: empty });
  const errors = form.formState.errors;
  const create = useMutation(trpc.users.create.mutationOptions());
  const { close, settle } = dialogMutation({ onOpenChange, forget: () => form.reset(empty), mutation: create });
  const submit = form.handleSubmit(async (values) => {
    const created = await settle(create.mutateAsync({ ...values, organization_slug: slug }));
    if (created) {
      onCreated();
      await invalidate();
    }
  });

  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={
        <button type="button" className="button button--primary" data-testid="users-create-open">
          Add user
        </button>
      }
      title="Add user"
      description="The person is invited: they join this organization once they sign in with this email and accept (an account is created in the identity engine when svc manages it). Until then you see only what you type here."
      onSubmit={submit}
      submitLabel="Add user"
      pending={create.isPending}
      pendingLabel="Adding…"
      error={create.error}
      errorTitle="Could not add the user"
      testId="users-create"
    >
      <div className="form-grid">
        <Field label="Email" error={errors.email?.message} testId="users-create-email">
          {(control) => <input {...control} type="email" autoComplete="off" data-testid="users-create-email" {...form.register('email')} />}
        </Field>
        <Field label="Name (optional)" error={errors.name?.message} testId="users-create-name">
          {(control) => (
            <input
              {...control}
              autoComplete="off"
              data-testid="users-create-name"
              {...form.register('name', { setValueAs: (v: string) => (v.trim() === '' ? undefined : v) })}
            />
          )}
        </Field>
        <Field label="Role" error={errors.roleKey?.message}>
          {(control) => (
            <Controller
              control={form.control}
              name="roleKey"
              render={({ field }) => (
                <Select {...control} value={field.value} options={roles} onValueChange={field.onChange} testId="users-create-role" />
              )}
            />
          )}
        </Field>
      </div>
    </FormDialog>
  );
}

/** "Change role…" from a row's menu: the organization's roles by name; a refusal stays in the dialog. */
function ChangeRoleDialog({
  slug,
  user,
  roles,
  onClose,
}: {
  slug: string;
  user: TUser;
  roles: SelectOption<string>[];
  onClose: () => void;
}) {
  const trpc = useTRPC();
  const invalidate = useInvalidateUsers();
  const [roleKey, setRoleKey] = useState(user.roleKey);
  const update = useMutation(trpc.users.update.mutationOptions());
  const options = roles.some((role) => role.value === user.roleKey) ? roles : [{ value: user.roleKey, label: user.roleKey }, ...roles];
  const submit = async (event?: BaseSyntheticEvent) => {
    event?.preventDefault();
    if (roleKey === user.roleKey) {
      onClose();
      return;
    }
    const updated = await update.mutateAsync({ id: user.id, organization_slug: slug, roleKey }).catch(() => undefined);
    if (updated) {
      onClose();
      await invalidate();
    }
  };
  return (
    <FormDialog
      open
      onOpenChange={(next) => !next && onClose()}
      title={`Change the role of ${personLabel(user)}`}
      description="What they may do in this organization changes at once. An organization keeps at least one admin."
      onSubmit={submit}
      submitLabel="Save role"
      pending={update.isPending}
      error={update.error}
      errorTitle="Could not change the role"
      testId="user-role-dialog"
    >
      <Field label="Role">
        {(control) => <Select {...control} value={roleKey} options={options} onValueChange={setRoleKey} testId="user-role-select" />}
      </Field>
    </FormDialog>
  );
}

/**
 * The row's "⋯" menu: Change role…, Suspend…/Reactivate…, then (separated) Remove from
 * organization…, confirmed by typing the person's email. An invitation can only be withdrawn.
 */
function UserActions({ user, context }: { user: TUser; context: RowContext }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateUsers();
  const update = useMutation(trpc.users.update.mutationOptions({ onSuccess: invalidate }));
  const remove = useMutation(trpc.users.remove.mutationOptions({ onSuccess: invalidate }));
  const label = personLabel(user);
  const { slug } = context;
  if (user.status === 'invited') {
    return (
      <RowActions
        name={user.email}
        testId="user-actions"
        actions={[
          {
            label: 'Withdraw invitation…',
            testId: 'user-remove',
            destructive: true,
            confirm: {
              title: `Withdraw the invitation of ${label}?`,
              consequence: 'They can no longer accept it.',
              confirmLabel: 'Withdraw',
              testId: 'user-remove-dialog',
              onConfirm: () => remove.mutateAsync({ id: user.id, organization_slug: slug }),
            },
          },
        ]}
      />
    );
  }
  const suspended = user.status === 'suspended';
  return (
    <RowActions
      name={user.email}
      testId="user-actions"
      actions={[
        { label: 'Change role…', testId: 'user-change-role', onSelect: () => context.changeRole(user) },
        suspended
          ? {
              label: 'Reactivate…',
              testId: 'user-reactivate',
              confirm: {
                title: `Reactivate ${label} in this organization?`,
                consequence: 'They can act in this organization again.',
                confirmLabel: 'Reactivate',
                tone: 'primary',
                testId: 'user-reactivate-dialog',
                onConfirm: () => update.mutateAsync({ id: user.id, organization_slug: slug, status: 'active' }),
              },
            }
          : {
              label: 'Suspend…',
              testId: 'user-suspend',
              confirm: {
                title: `Suspend ${label} in this organization?`,
                consequence:
                  'They lose access to this organization at once, until reactivated. Their account and their other organizations stay.',
                confirmLabel: 'Suspend',
                testId: 'user-suspend-dialog',
                onConfirm: () => update.mutateAsync({ id: user.id, organization_slug: slug, status: 'suspended' }),
              },
            },
        {
          label: 'Remove from organization…',
          testId: 'user-remove',
          destructive: true,
          confirm: {
            title: `Remove ${label} from this organization?`,
            consequence: 'They lose access to this organization at once. Their account and their other organizations stay.',
            confirmLabel: 'Remove',
            typeToConfirm: user.email,
            testId: 'user-remove-dialog',
            onConfirm: () => remove.mutateAsync({ id: user.id, organization_slug: slug }),
          },
        },
      ]}
    />
  );
}

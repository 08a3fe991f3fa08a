import { zodResolver } from '@hookform/resolvers/zod';
import { type TMembershipStatus, type TUser, ZCreateUserRequest } from '@svc/contracts/users';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { focusField } from '../../components/empty-state.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { StatusFilter } from '../../components/status-filter.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;
const SYSTEM_ROLE_KEYS = ['org_member', 'org_admin'];
const STATUSES: { value: TMembershipStatus; label: string }[] = [
  { value: 'invited', label: 'Invited' },
  { value: 'active', label: 'Active' },
  { value: 'suspended', label: 'Suspended' },
];
/** The add form's email field: the empty list's button takes the admin here. */
const EMAIL_FIELD_ID = 'users-create-email';

/**
 * The active organization's users: who they are, their membership's status and role here; add a
 * person (an invitation they accept when signed in), change a role, suspend the membership (they
 * lose this organization at once, and keep every other) or reactivate it. A person's name is
 * their own: it is not edited here.
 */
export function UsersPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const pager = usePager();
  const [status, setStatus] = useState<TMembershipStatus | ''>('');
  const [emailPrefix, setEmailPrefix] = useState('');
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
  const roles = useQuery(trpc.roles.list.queryOptions({ organization_slug: slug, limit: 200 }, { enabled: slug !== undefined }));
  const roleKeys = roles.data ? roles.data.data.map((r) => r.key) : SYSTEM_ROLE_KEYS;
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
      />
      <ListPage
        testId="users"
        noun="users"
        workspace={active}
        query={users}
        pager={pager}
        filtered={filtered ? { title: 'No users match.', clear: clearFilters } : undefined}
        empty={{
          title: 'No users yet.',
          next: 'Add a user above: they join once they accept.',
          action: { label: 'Add a user', onClick: focusField(EMAIL_FIELD_ID) },
        }}
        above={(organization) => (
          <>
            <CreateUserForm slug={organization.slug} roleKeys={roleKeys} onCreated={pager.reset} />
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
          </>
        )}
        columns={['User', 'Status', 'Role', 'Last sign-in', 'Actions']}
        rowKey={(user) => user.id}
        row={(user, organization) => <UserRow user={user} slug={organization.slug} roleKeys={roleKeys} />}
      />
    </div>
  );
}

function useInvalidateUsers() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: trpc.users.list.queryKey() }),
      // Suspending ends sessions; the members page shows roles.
      queryClient.invalidateQueries({ queryKey: trpc.sessions.list.queryKey() }),
      queryClient.invalidateQueries({ queryKey: trpc.tenants.member.list.queryKey() }),
    ]);
}

function CreateUserForm({ slug, roleKeys, onCreated }: { slug: string; roleKeys: string[]; onCreated: () => void }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateUsers();
  const form = useForm({
    resolver: zodResolver(ZCreateUserRequest),
    defaultValues: { organization_slug: slug, email: '', name: undefined, roleKey: 'org_member' },
  });
  const errors = form.formState.errors;
  const create = useMutation(
    trpc.users.create.mutationOptions({
      onSuccess: async () => {
        form.reset({ organization_slug: slug, email: '', name: undefined, roleKey: 'org_member' });
        onCreated();
        await invalidate();
      },
    }),
  );
  const submit = form.handleSubmit((values) => create.mutateAsync({ ...values, organization_slug: slug }).catch(() => undefined));

  return (
    <section className="panel" data-testid="users-create">
      <h2 className="panel__title">Add a user</h2>
      <p className="muted">
        The person is invited: they join this organization once they sign in with this email and accept (an account is created in the
        identity engine when svc manages it). Until then you see only what you typed here.
      </p>
      <form className="form-row" onSubmit={submit} noValidate data-testid="users-create-form">
        <label className="form-field">
          <span>Email</span>
          <input id={EMAIL_FIELD_ID} type="email" autoComplete="off" data-testid="users-create-email" {...form.register('email')} />
          {errors.email && (
            <span className="form-field__error" data-testid="users-create-email-error">
              {errors.email.message}
            </span>
          )}
        </label>
        <label className="form-field">
          <span>Name (optional)</span>
          <input
            autoComplete="off"
            data-testid="users-create-name"
            {...form.register('name', { setValueAs: (v: string) => (v.trim() === '' ? undefined : v) })}
          />
          {errors.name && (
            <span className="form-field__error" data-testid="users-create-name-error">
              {errors.name.message}
            </span>
          )}
        </label>
        <label className="form-field">
          <span>Role</span>
          <select data-testid="users-create-role" {...form.register('roleKey')}>
            {roleKeys.map((key) => (
              <option key={key} value={key}>
                {key}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" className="button button--primary" disabled={create.isPending} data-testid="users-create-submit">
          {create.isPending ? 'Adding…' : 'Add user'}
        </button>
      </form>
      {create.isSuccess && (
        <p className="muted" data-testid="users-created">
          Invited {create.data.email}: they join once they accept.
        </p>
      )}
      {create.isError && <ErrorPanel error={create.error} title="Could not add the user" />}
    </section>
  );
}

function UserRow({ user, slug, roleKeys }: { user: TUser; slug: string; roleKeys: string[] }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateUsers();
  const [roleKey, setRoleKey] = useState(user.roleKey);
  const update = useMutation(
    trpc.users.update.mutationOptions({
      onSuccess: invalidate,
      // A refused role change: show the role the user still holds, beside the reason.
      onError: () => setRoleKey(user.roleKey),
    }),
  );
  const remove = useMutation(trpc.users.remove.mutationOptions({ onSuccess: invalidate }));
  const options = roleKeys.includes(user.roleKey) ? roleKeys : [user.roleKey, ...roleKeys];
  const label = user.name ? `${user.name} (${user.email})` : user.email;

  return (
    <tr data-testid="user-row" data-user-id={user.id} data-email={user.email}>
      <td>
        <div data-testid="user-name">{user.name || <span className="muted">(no name)</span>}</div>
        <div className="muted" data-testid="user-email">
          {user.email}
          {user.status !== 'invited' && !user.emailVerified && ' · email not verified'}
        </div>
      </td>
      <td>
        <span className={`pill ${user.status === 'active' ? 'pill--on' : 'pill--off'}`} data-testid="user-status">
          {user.status}
        </span>
      </td>
      <td>
        <form
          className="form-row"
          onSubmit={(e) => {
            e.preventDefault();
            update.mutateAsync({ id: user.id, organization_slug: slug, roleKey }).catch(() => undefined);
          }}
        >
          <select aria-label={`Role of ${user.email}`} data-testid="user-role" value={roleKey} onChange={(e) => setRoleKey(e.target.value)}>
            {options.map((key) => (
              <option key={key} value={key}>
                {key}
              </option>
            ))}
          </select>
          <button type="submit" className="button" disabled={update.isPending || roleKey === user.roleKey} data-testid="user-role-save">
            Save role
          </button>
        </form>
      </td>
      <td>
        {user.lastSignInAt ? (
          <time dateTime={user.lastSignInAt} title={user.lastSignInAt}>
            {new Date(user.lastSignInAt).toLocaleString()}
          </time>
        ) : (
          <span className="muted">{user.status === 'invited' ? '—' : 'never'}</span>
        )}
      </td>
      <td>
        {user.status === 'invited' ? null : user.status === 'active' ? (
          <ConfirmButton
            question={`Suspend ${label} in this organization?`}
            consequence="They lose access to this organization at once, until reactivated. Their account and their other organizations stay."
            confirmLabel="Suspend"
            disabled={update.isPending}
            onConfirm={() => update.mutateAsync({ id: user.id, organization_slug: slug, status: 'suspended' }).catch(() => undefined)}
            testId="user-suspend"
          >
            Suspend
          </ConfirmButton>
        ) : (
          <ConfirmButton
            question={`Reactivate ${label} in this organization?`}
            consequence="They can act in this organization again."
            confirmLabel="Reactivate"
            disabled={update.isPending}
            onConfirm={() => update.mutateAsync({ id: user.id, organization_slug: slug, status: 'active' }).catch(() => undefined)}
            testId="user-reactivate"
          >
            Reactivate
          </ConfirmButton>
        )}
        <ConfirmButton
          question={user.status === 'invited' ? `Withdraw the invitation of ${label}?` : `Remove ${label} from this organization?`}
          consequence={
            user.status === 'invited'
              ? 'They can no longer accept it.'
              : 'They lose access to this organization at once. Their account and their other organizations stay.'
          }
          confirmLabel={user.status === 'invited' ? 'Withdraw' : 'Remove'}
          disabled={remove.isPending}
          onConfirm={() => remove.mutateAsync({ id: user.id, organization_slug: slug }).catch(() => undefined)}
          testId="user-remove"
        >
          {user.status === 'invited' ? 'Withdraw' : 'Remove'}
        </ConfirmButton>
        {update.isError && <ErrorPanel error={update.error} title="Could not update the user" />}
        {remove.isError && <ErrorPanel error={remove.error} title="Could not remove the user" />}
      </td>
    </tr>
  );
}

import { zodResolver } from '@hookform/resolvers/zod';
import { type TInvitation, type TInvitationStatus, ZCreateInvitationRequest } from '@svc/contracts/invitations';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { Link } from 'react-router';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { focusField } from '../../components/empty-state.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { SecretOnce } from '../../components/secret-once.tsx';
import { StatusFilter } from '../../components/status-filter.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;
const SYSTEM_ROLE_KEYS = ['org_member', 'org_admin'];
const STATUSES: TInvitationStatus[] = ['pending', 'accepted', 'revoked', 'expired'];
/** The invite form's email field: the empty list's button takes the admin here. */
const EMAIL_FIELD_ID = 'invitations-create-email';

/**
 * Invitations to the active organization: invite by email (the one-time link is shown once, to
 * copy and send), follow their status, revoke pending ones.
 */
export function InvitationsPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const pager = usePager();
  const [status, setStatus] = useState<TInvitationStatus | ''>('');
  const slug = active.organization?.slug;
  const invitations = useQuery({
    ...trpc.invitations.list.queryOptions(
      { organization_slug: slug, limit: PAGE_SIZE, cursor: pager.cursor, ...(status ? { status } : {}) },
      { enabled: slug !== undefined },
    ),
    placeholderData: keepPreviousData,
  });
  const roles = useQuery(trpc.roles.list.queryOptions({ organization_slug: slug, limit: 200 }, { enabled: slug !== undefined }));
  const roleKeys = roles.data ? roles.data.data.map((r) => r.key) : SYSTEM_ROLE_KEYS;
  const showAll = () => {
    setStatus('');
    pager.reset();
  };

  return (
    <div data-testid="page-invitations">
      <PageHeader
        title="Invitations"
        description={`Invite people to ${active.organization ? active.organization.name : 'this workspace'}. Each invite link works once, for the invited email, until it expires.`}
      />
      <ListPage
        testId="invitations"
        noun="invitations"
        workspace={active}
        query={invitations}
        pager={pager}
        filtered={status ? { title: `No ${status} invitations.`, clear: showAll } : undefined}
        empty={{
          title: 'No invitations yet.',
          next: 'Invite someone above: svc shows the one-time link to send them.',
          action: { label: 'Invite someone', onClick: focusField(EMAIL_FIELD_ID) },
        }}
        above={(organization) => (
          <>
            <CreateInvitationForm slug={organization.slug} roleKeys={roleKeys} onCreated={pager.reset} />
            <form className="form-row" data-testid="invitations-filters" onSubmit={(e) => e.preventDefault()}>
              <StatusFilter testId="invitations-filter-status" options={STATUSES} value={status} onChange={setStatus} pager={pager} />
            </form>
          </>
        )}
        columns={['Email', 'Role', 'Status', 'Expires', 'Created', '']}
        rowKey={(invitation) => invitation.id}
        row={(invitation, organization) => <InvitationRow invitation={invitation} slug={organization.slug} />}
      />
    </div>
  );
}

function useInvalidateInvitations() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return () => queryClient.invalidateQueries({ queryKey: trpc.invitations.list.queryKey() });
}

const when = (iso: string | null) =>
  iso ? (
    <time dateTime={iso} title={iso}>
      {new Date(iso).toLocaleString()}
    </time>
  ) : (
    <span className="muted">—</span>
  );

function InvitationRow({ invitation, slug }: { invitation: TInvitation; slug: string }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateInvitations();
  const revoke = useMutation(trpc.invitations.revoke.mutationOptions({ onSuccess: invalidate }));
  const revocable = invitation.status === 'pending' || invitation.status === 'expired';
  return (
    <>
      <tr data-testid="invitation-row" data-invitation-id={invitation.id} data-email={invitation.email}>
        <td data-testid="invitation-email">
          {invitation.email}
          {!invitation.requireEmailMatch && <div className="muted">any signed-in user may accept</div>}
        </td>
        <td>
          <code>{invitation.roleKey}</code>
        </td>
        <td>
          <span
            className={`pill ${invitation.status === 'pending' || invitation.status === 'accepted' ? 'pill--on' : 'pill--off'}`}
            data-testid="invitation-status"
          >
            {invitation.status}
          </span>
        </td>
        <td>{invitation.status === 'accepted' ? when(invitation.acceptedAt) : when(invitation.expiresAt)}</td>
        <td>{when(invitation.createdAt)}</td>
        <td>
          {revocable && (
            <ConfirmButton
              question={`Revoke the invitation for ${invitation.email}?`}
              consequence="The invite link stops working at once. You can invite the same address again."
              confirmLabel="Revoke"
              testId="invitation-revoke"
              disabled={revoke.isPending}
              onConfirm={() => revoke.mutateAsync({ id: invitation.id, organization_slug: slug }).catch(() => undefined)}
            >
              Revoke
            </ConfirmButton>
          )}
        </td>
      </tr>
      {revoke.isError && (
        <tr>
          <td colSpan={6}>
            <ErrorPanel error={revoke.error} title="Could not revoke the invitation" />
          </td>
        </tr>
      )}
    </>
  );
}

function CreateInvitationForm({ slug, roleKeys, onCreated }: { slug: string; roleKeys: string[]; onCreated: () => void }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateInvitations();
  const empty = { organization_slug: slug, email: '', roleKey: 'org_member', requireEmailMatch: true as boolean };
  const form = useForm({ resolver: zodResolver(ZCreateInvitationRequest), defaultValues: empty });
  const errors = form.formState.errors;
  const create = useMutation(
    trpc.invitations.create.mutationOptions({
      onSuccess: async () => {
        form.reset(empty);
        onCreated();
        await invalidate();
      },
    }),
  );
  const submit = form.handleSubmit((values) => create.mutateAsync({ ...values, organization_slug: slug }).catch(() => undefined));

  return (
    <section className="panel" data-testid="invitations-create">
      <h2 className="panel__title">Invite someone</h2>
      <p className="muted">
        svc shows the invite link once: copy it and send it to the person. They sign in (or sign up) with the invited email and accept.
      </p>
      <form className="form-row" onSubmit={submit} noValidate data-testid="invitations-create-form">
        <label className="form-field">
          <span>Email</span>
          <input id={EMAIL_FIELD_ID} type="email" autoComplete="off" data-testid="invitations-create-email" {...form.register('email')} />
          {errors.email && (
            <span className="form-field__error" data-testid="invitations-create-email-error">
              {errors.email.message}
            </span>
          )}
        </label>
        <label className="form-field">
          <span>Role</span>
          <select data-testid="invitations-create-role" {...form.register('roleKey')}>
            {roleKeys.map((key) => (
              <option key={key} value={key}>
                {key}
              </option>
            ))}
          </select>
        </label>
        <label className="form-field" style={{ flexDirection: 'row', alignItems: 'center', gap: 6 }}>
          <input type="checkbox" data-testid="invitations-create-require-email" {...form.register('requireEmailMatch')} />
          <span>Only this email may accept</span>
        </label>
        <button type="submit" className="button button--primary" disabled={create.isPending} data-testid="invitations-create-submit">
          {create.isPending ? 'Inviting…' : 'Create invitation'}
        </button>
      </form>
      {create.isSuccess && (
        <div data-testid="invitations-created">
          <p className="muted">
            Invited {create.data.invitation.email} as <code>{create.data.invitation.roleKey}</code>; the link expires{' '}
            {new Date(create.data.invitation.expiresAt).toLocaleString()}.
          </p>
          {create.data.emailDelivery ? (
            <p className="muted" data-testid="invitations-email-queued">
              An invitation email to {create.data.invitation.email} is queued; follow it on the{' '}
              <Link to="/email-deliveries">Email deliveries</Link> page. The link is also here, once:
            </p>
          ) : (
            <p className="muted" data-testid="invitations-email-off">
              Email delivery is off on this server: copy the link and send it yourself.
            </p>
          )}
          <SecretOnce label="Invite link" value={create.data.inviteLink} testId="invite-link" />
        </div>
      )}
      {create.isError && <ErrorPanel error={create.error} title="Could not create the invitation" />}
    </section>
  );
}

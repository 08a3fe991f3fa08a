import type { TCreateInvitationResponse, TInvitation, TInvitationStatus } from '@svc/contracts/invitations';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { actionsColumn, columnHelper, whenColumn } from '../../components/data-table.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { isPlatformWorkspace, ManagedMemberships } from '../../components/managed-memberships.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { emailColumn, roleColumn } from '../../components/person-columns.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { SecretOnceDialog } from '../../components/secret-once.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { StatusFilter } from '../../components/status-filter.tsx';
import { When } from '../../components/when.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useRoleOptions } from '../../lib/roles.ts';
import { useTRPC } from '../../trpc.ts';
import { PeopleTabs } from '../people/people-tabs.tsx';
import { InviteDialog } from './invite-dialog.tsx';

/** An invitation's own page (the Invitations tab of People). */
export function invitationPath(id: string): string {
  return `/people/invitations/${encodeURIComponent(id)}`;
}

const PAGE_SIZE = 50;
const STATUSES: TInvitationStatus[] = ['pending', 'accepted', 'revoked', 'expired'];

/** What a row needs besides its invitation: the organization, role names, and where a new link goes. */
type RowContext = { slug: string; nameOf: (key: string) => string; onResent: (resent: TCreateInvitationResponse) => Promise<void> };

/** When an accepted or revoked invitation ended, for the status pill's tooltip. */
function endedAt(invitation: TInvitation): string | undefined {
  const at = invitation.status === 'accepted' ? invitation.acceptedAt : invitation.status === 'revoked' ? invitation.revokedAt : null;
  return at ? `${invitation.status} ${new Date(at).toLocaleString()}` : undefined;
}

/**
 * The columns: the email takes what the sized ones leave; the role by its name (its key in
 * `data-role-key`); times relative, exact on hover; the id an Identifier.
 */
function invitationColumns(context: () => RowContext) {
  const column = columnHelper<TInvitation>();
  return column.columns([
    emailColumn<TInvitation>({
      testId: 'invitation-email',
      to: (invitation) => invitationPath(invitation.id),
      note: (invitation) => !invitation.requireEmailMatch && 'any signed-in user may accept',
    }),
    roleColumn<TInvitation>({ testId: 'invitation-role', nameOf: () => context().nameOf }),
    column.accessor('status', {
      header: 'Status',
      sortFn: 'text',
      meta: { width: '8rem' },
      cell: (info) => {
        const invitation = info.row.original;
        return (
          <span
            className={`pill ${invitation.status === 'pending' || invitation.status === 'accepted' ? 'pill--on' : 'pill--off'}`}
            data-testid="invitation-status"
            title={endedAt(invitation)}
          >
            {invitation.status}
          </span>
        );
      },
    }),
    whenColumn(column, 'createdAt', 'Invited', { width: '9rem' }),
    whenColumn(column, 'expiresAt', 'Expires', {
      width: '7.5rem',
      description: 'Until then the link works, once, for the invited email',
      // Only a link that still works, or has just run out, has an expiry worth showing.
      shown: (invitation, at) => (invitation.status === 'pending' || invitation.status === 'expired' ? at : null),
      testId: 'invitation-expires',
    }),
    column.accessor('id', {
      header: 'ID',
      enableSorting: false,
      meta: { width: '10.5rem' },
      cell: (info) => <Identifier value={info.getValue()} label="invitation id" testId="invitation-id" />,
    }),
    actionsColumn(column, (invitation) => <InvitationActions invitation={invitation} context={context()} />),
  ]);
}

/** A link the api has just returned: in its dialog until dismissed, never fetched again. */
type Revealed = { title: string; created: TCreateInvitationResponse };

/**
 * Invitations to the active organization: invite by email (the one-time link is shown once, to
 * copy and send), follow their status, send a new link, revoke pending ones.
 */
export function InvitationsPage() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const active = useActiveOrganization();
  const pager = usePager();
  const [status, setStatus] = useState<TInvitationStatus | ''>('');
  const [inviting, setInviting] = useState(false);
  const [revealed, setRevealed] = useState<Revealed | null>(null);
  const slug = active.organization?.slug;
  const managed = isPlatformWorkspace(active.organization);
  const invitations = useQuery({
    ...trpc.invitations.list.queryOptions(
      { organization_slug: slug, limit: PAGE_SIZE, cursor: pager.cursor, ...(status ? { status } : {}) },
      { enabled: slug !== undefined },
    ),
    placeholderData: keepPreviousData,
  });
  const roles = useRoleOptions(slug);
  const reveal = async (title: string, created: TCreateInvitationResponse) => {
    setRevealed({ title, created });
    // The new invitation is the newest: show the first page.
    pager.reset();
    // A resend revoked the old invitation: its page, if open, shows that.
    await Promise.all([
      queryClient.invalidateQueries({ queryKey: trpc.invitations.list.pathKey() }),
      queryClient.invalidateQueries({ queryKey: trpc.invitations.get.pathKey() }),
    ]);
  };
  // Columns are made once; the cells read the latest organization and role names through this.
  const context: RowContext = {
    slug: slug ?? '',
    nameOf: roles.nameOf,
    onResent: (resent) => reveal(`New link for ${resent.invitation.email}`, resent),
  };
  const [latest] = useState(() => ({ current: context }));
  latest.current = context;
  const [columns] = useState(() => invitationColumns(() => latest.current));
  const showAll = () => {
    setStatus('');
    pager.reset();
  };
  const shown = revealed?.created;
  const selected = useParams().id ?? null;

  return (
    <div data-testid="page-invitations">
      <PageHeader
        title="People"
        description={`Invite people to ${active.organization ? active.organization.name : 'this workspace'}. Each invite link works once, for the invited email, until it expires.`}
        actions={
          slug &&
          !managed && (
            <InviteDialog
              slug={slug}
              roles={roles.options}
              open={inviting}
              onOpenChange={setInviting}
              onCreated={(created) => reveal(`${created.invitation.email} is invited`, created)}
              onResent={(resent) => reveal(`New link for ${resent.invitation.email}`, resent)}
            />
          )
        }
      />
      <PeopleTabs />
      {managed && <ManagedMemberships testId="invitations-managed" />}
      <SecretOnceDialog
        revealed={revealed && { title: revealed.title, value: revealed.created.inviteLink }}
        onDismiss={() => setRevealed(null)}
        description="Send the link to the person: they sign in (or sign up) with the invited email and accept."
        label="Invite link"
        bodyAttributes={revealed ? { 'data-invitation-id': revealed.created.invitation.id } : undefined}
        testId="invitations-created"
        secretTestId="invite-link"
      >
        {shown && (
          <>
            <p className="muted">
              Invited {shown.invitation.email} as {roles.nameOf(shown.invitation.roleKey)}; the link expires{' '}
              <When at={shown.invitation.expiresAt} empty="—" />.
            </p>
            {shown.emailDelivery ? (
              <p className="muted" data-testid="invitations-email-queued">
                An invitation email to {shown.invitation.email} is queued; follow it on the{' '}
                <Link to="/email-deliveries">Email deliveries</Link> page. The link is also here, once:
              </p>
            ) : (
              <p className="muted" data-testid="invitations-email-off">
                Email delivery is off on this server: copy the link and send it yourself.
              </p>
            )}
          </>
        )}
      </SecretOnceDialog>
      {selected ? (
        <InvitationDetail id={selected} context={context} managed={managed} />
      ) : (
        <ListPage
          testId="invitations"
          noun="invitations"
          workspace={active}
          query={invitations}
          pager={pager}
          filtered={status ? { title: `No ${status} invitations.`, clear: showAll } : undefined}
          empty={{
            title: 'No invitations yet.',
            next: 'Invite someone: svc shows the one-time link to send them.',
            ...(managed ? {} : { action: { label: 'Invite someone', onClick: () => setInviting(true) } }),
          }}
          above={() => (
            <form className="form-row" data-testid="invitations-filters" onSubmit={(e) => e.preventDefault()}>
              <StatusFilter testId="invitations-filter-status" options={STATUSES} value={status} onChange={setStatus} pager={pager} />
            </form>
          )}
          rowKey={(invitation) => invitation.id}
          table={{
            columns,
            rowAttributes: (invitation) => ({
              'data-testid': 'invitation-row',
              'data-invitation-id': invitation.id,
              'data-email': invitation.email,
              'data-status': invitation.status,
            }),
            minWidth: '60rem',
          }}
        />
      )}
    </div>
  );
}

/**
 * One invitation on its own page (/people/invitations/<id>): whom, which role, its status and
 * times, and the same menu as its row (Resend…, Revoke…). Never the link: it was shown once.
 */
function InvitationDetail({ id, context, managed }: { id: string; context: RowContext; managed: boolean }) {
  const trpc = useTRPC();
  const slug = context.slug || undefined;
  const invitation = useQuery(trpc.invitations.get.queryOptions({ id, organization_slug: slug }, { enabled: slug !== undefined }));
  const data = invitation.data;
  return (
    <>
      <p className="breadcrumb">
        <Link to="/people/invitations" data-testid="invitation-detail-back">
          ← Invitations
        </Link>
      </p>
      {invitation.isError && (
        <ErrorPanel error={invitation.error} title="Could not load the invitation" onRetry={() => void invitation.refetch()} />
      )}
      {(slug === undefined || invitation.isPending) && !invitation.isError && (
        <Skeleton label="Loading the invitation…" testId="invitation-detail-loading" />
      )}
      {data && (
        <section className="panel" data-testid="invitation-detail" data-invitation-id={data.id} data-status={data.status}>
          <div className="panel__header">
            <h2 className="panel__title">{data.email}</h2>
            <div className="panel__actions">{!managed && <InvitationActions invitation={data} context={context} />}</div>
          </div>
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <span
                className={`pill ${data.status === 'pending' || data.status === 'accepted' ? 'pill--on' : 'pill--off'}`}
                data-testid="invitation-detail-status"
              >
                {data.status}
              </span>
            </dd>
            <dt>Role</dt>
            <dd data-testid="invitation-detail-role">
              {context.nameOf(data.roleKey)} <span className="muted">{data.roleKey}</span>
            </dd>
            <dt>Who may accept</dt>
            <dd>{data.requireEmailMatch ? `Only ${data.email}, signed in with it verified` : 'Anyone signed in with the link'}</dd>
            <dt>Invitation ID</dt>
            <dd>
              <Identifier value={data.id} label="invitation id" testId="invitation-detail-id" />
            </dd>
            <dt>Invited</dt>
            <dd>
              <When at={data.createdAt} empty="—" />
            </dd>
            <dt>{data.status === 'expired' ? 'Expired' : 'Expires'}</dt>
            <dd>
              <When at={data.expiresAt} empty="—" />
            </dd>
            {data.acceptedAt && (
              <>
                <dt>Accepted</dt>
                <dd>
                  <When at={data.acceptedAt} empty="—" />
                </dd>
              </>
            )}
            {data.revokedAt && (
              <>
                <dt>Revoked</dt>
                <dd>
                  <When at={data.revokedAt} empty="—" />
                </dd>
              </>
            )}
          </dl>
        </section>
      )}
    </>
  );
}

/**
 * The row's "⋯" menu, for invitations not yet accepted: Resend… (a new link with the same role, shown
 * once; the API revokes a pending invitation in the same step),
 * then (separated) Revoke…, confirmed, while the link still exists.
 */
function InvitationActions({ invitation, context }: { invitation: TInvitation; context: RowContext }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const invalidate = () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: trpc.invitations.list.pathKey() }),
      queryClient.invalidateQueries({ queryKey: trpc.invitations.get.pathKey() }),
    ]);
  const revoke = useMutation(trpc.invitations.revoke.mutationOptions({ onSuccess: invalidate }));
  const resendLink = useMutation(trpc.invitations.resend.mutationOptions());
  if (invitation.status === 'accepted') {
    return null;
  }
  const { slug } = context;
  const pending = invitation.status === 'pending';
  const revocable = pending || invitation.status === 'expired';
  // One request: the API revokes a pending invitation and creates the new one in one transaction,
  // so a refusal leaves the current link working.
  const resend = async () => {
    const resent = await resendLink.mutateAsync({ id: invitation.id, organization_slug: slug });
    await context.onResent(resent);
  };
  return (
    <RowActions
      name={invitation.email}
      testId="invitation-actions"
      actions={[
        {
          label: 'Resend…',
          testId: 'invitation-resend',
          confirm: {
            title: `Send a new invite link to ${invitation.email}?`,
            consequence: pending
              ? 'A new link is made, with the same role, and shown once; the current link stops working at once.'
              : 'A new link is made, with the same role, and shown once.',
            confirmLabel: 'Send new link',
            tone: 'primary',
            testId: 'invitation-resend-dialog',
            onConfirm: resend,
          },
        },
        ...(revocable
          ? [
              {
                label: 'Revoke…',
                testId: 'invitation-revoke',
                destructive: true,
                confirm: {
                  title: `Revoke the invitation for ${invitation.email}?`,
                  consequence: 'The invite link stops working at once. You can invite the same address again.',
                  confirmLabel: 'Revoke',
                  testId: 'invitation-revoke-dialog',
                  onConfirm: () => revoke.mutateAsync({ id: invitation.id, organization_slug: slug }),
                },
              },
            ]
          : []),
      ]}
    />
  );
}

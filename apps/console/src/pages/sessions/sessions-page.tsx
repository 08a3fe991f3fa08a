import type { TSession } from '@svc/contracts/sessions';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { actionsColumn, columnHelper, whenColumn } from '../../components/data-table.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { StatusFilter } from '../../components/status-filter.tsx';
import { When } from '../../components/when.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;
const STATES = [
  { value: 'active', label: 'Active sessions' },
  { value: 'all', label: 'All, with revoked and expired' },
] as const;

/**
 * The list's columns: the person and the device take what the sized columns leave, each line cut
 * with an ellipsis (the whole user agent on hover); the IP address is an Identifier; times relative.
 */
function sessionColumns(slug: () => string) {
  const column = columnHelper<TSession>();
  return column.columns([
    column.accessor((session) => session.user.email, {
      id: 'user',
      header: 'User',
      sortFn: 'text',
      cell: (info) => {
        const { user } = info.row.original;
        return (
          <div title={user.name ? `${user.name} (${user.email})` : user.email}>
            <div data-testid="session-user">{user.name || user.email}</div>
            {user.name && <div className="muted">{user.email}</div>}
          </div>
        );
      },
    }),
    column.accessor('device', {
      header: 'Device',
      sortFn: 'text',
      cell: (info) => {
        const session = info.row.original;
        return (
          <div title={session.userAgent ?? undefined}>
            <div data-testid="session-device">{session.device}</div>
            {session.userAgent && (
              <div className="muted" data-testid="session-user-agent">
                {session.userAgent}
              </div>
            )}
          </div>
        );
      },
    }),
    column.accessor('ipAddress', {
      header: 'IP address',
      enableSorting: false,
      meta: { width: '10rem' },
      cell: (info) => {
        const ip = info.getValue();
        return ip ? <Identifier value={ip} label="IP address" tail={4} testId="session-ip" /> : <span className="muted">—</span>;
      },
    }),
    column.accessor((session) => session.applications.map((app) => app.name).join(', '), {
      id: 'applications',
      header: 'Applications',
      enableSorting: false,
      meta: { width: '10rem' },
      cell: (info) => {
        const apps = info.row.original.applications;
        if (apps.length === 0) {
          return <span className="muted">—</span>;
        }
        return (
          <div
            data-testid="session-applications"
            title={apps.map((app) => `${app.name} (${app.id})${app.endedAt ? ', ended' : ''}`).join('\n')}
          >
            {apps.map((app) => (
              <div key={app.id} data-testid="session-application" data-application-id={app.id}>
                {app.name}
                {app.endedAt && (
                  <span className="muted" data-testid="session-application-ended">
                    {' '}
                    (ended <When at={app.endedAt} empty="—" format="relative" />)
                  </span>
                )}
              </div>
            ))}
          </div>
        );
      },
    }),
    whenColumn(column, 'createdAt', 'Signed in', { width: '9rem' }),
    whenColumn(column, 'lastSeenAt', 'Last seen', { width: '9rem' }),
    column.accessor('status', {
      header: 'Status',
      sortFn: 'text',
      meta: { width: '8.5rem' },
      cell: (info) => {
        const session = info.row.original;
        return (
          // Two lines, each whole: the status, then "This browser" under it.
          <div className="stack">
            <span>
              <span className={`pill ${session.status === 'active' ? 'pill--on' : 'pill--off'}`} data-testid="session-status">
                {session.status}
              </span>
            </span>
            {session.current && (
              <span>
                <span className="badge" data-testid="session-current">
                  This browser
                </span>
              </span>
            )}
          </div>
        );
      },
    }),
    actionsColumn(column, (session) => <SessionActions session={session} slug={slug()} />),
  ]);
}

/** Where the active organization's members are signed in; revoking one signs that browser out. */
export function SessionsPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const pager = usePager();
  const [state, setState] = useState<'active' | 'all'>('active');
  const slug = active.organization?.slug;
  const sessions = useQuery({
    ...trpc.sessions.list.queryOptions(
      { organization_slug: slug, state, limit: PAGE_SIZE, cursor: pager.cursor },
      { enabled: slug !== undefined },
    ),
    placeholderData: keepPreviousData,
  });
  // Columns are made once; the row menus read the current organization through this.
  const [latest] = useState(() => ({ slug: '' }));
  latest.slug = slug ?? '';
  const [columns] = useState(() => sessionColumns(() => latest.slug));

  return (
    <div data-testid="page-sessions">
      <PageHeader
        title="Sessions"
        description={`Where members of ${active.organization ? active.organization.name : 'this workspace'} are signed in, and the applications each session signed in to through svc. A revoked session is refused on its next request, on every server, and signs out of those applications (their refresh tokens stop, back-channel logout is sent).`}
      />
      <ListPage
        testId="sessions"
        noun="sessions"
        workspace={active}
        query={sessions}
        pager={pager}
        filtered={
          state === 'active'
            ? {
                title: 'No active sessions.',
                clear: () => {
                  setState('all');
                  pager.reset();
                },
              }
            : undefined
        }
        empty={{ title: 'No sessions.', next: "Members' sessions appear here when they sign in." }}
        above={() => (
          <form className="form-row" data-testid="sessions-filters" onSubmit={(e) => e.preventDefault()}>
            <StatusFilter
              testId="sessions-filter-state"
              label="Show"
              anyLabel={null}
              options={STATES}
              value={state}
              onChange={(value) => setState(value === 'all' ? 'all' : 'active')}
              pager={pager}
            />
          </form>
        )}
        rowKey={(session) => session.id}
        table={{
          columns,
          rowAttributes: (session) => ({
            'data-testid': 'session-row',
            'data-session-id': session.id,
            'data-email': session.user.email,
            'data-status': session.status,
          }),
          minWidth: '68rem',
        }}
      />
    </div>
  );
}

/** The row's "⋯" menu: Revoke session…, confirmed; only for active sessions. */
function SessionActions({ session, slug }: { session: TSession; slug: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const revoke = useMutation(
    trpc.sessions.revoke.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.sessions.list.queryKey() }),
    }),
  );
  if (session.status !== 'active') {
    return null;
  }
  const who = session.user.name ? `${session.user.name} (${session.user.email})` : session.user.email;
  return (
    <RowActions
      name={`${who}, ${session.device}`}
      testId="session-actions"
      actions={[
        {
          label: 'Revoke session…',
          testId: 'session-revoke',
          destructive: true,
          confirm: {
            title: `Revoke ${session.current ? 'your own session' : `the session of ${who}`} (${session.device})?`,
            consequence: session.current
              ? 'This browser is signed out at once.'
              : 'That browser is signed out at once: its next request is refused on every server.',
            confirmLabel: 'Revoke session',
            testId: 'session-revoke-dialog',
            onConfirm: () => revoke.mutateAsync({ id: session.id, organization_slug: slug }),
          },
        },
      ]}
    />
  );
}

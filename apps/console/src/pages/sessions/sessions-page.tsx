import type { TSession } from '@svc/contracts/sessions';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { actionsColumn, columnHelper, whenColumn } from '../../components/data-table.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { StatusFilter } from '../../components/status-filter.tsx';
import { When } from '../../components/when.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;

/** A session's own page. */
function sessionPath(id: string): string {
  return `/sessions/${encodeURIComponent(id)}`;
}
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
            {/* The device opens the session's own page. */}
            <div data-testid="session-device">
              <Link to={sessionPath(session.id)}>{session.device}</Link>
            </div>
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
  const selected = useParams().id ?? null;

  return (
    <div data-testid="page-sessions">
      <PageHeader
        title="Sessions"
        description={`Where members of ${active.organization ? active.organization.name : 'this workspace'} are signed in, and the applications each session signed in to through svc. A revoked session is refused on its next request, on every server, and signs out of those applications (their refresh tokens stop, back-channel logout is sent).`}
      />
      {selected ? (
        <SessionDetail id={selected} slug={slug} />
      ) : (
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
      )}
    </div>
  );
}

/**
 * One session on its own page (/sessions/<id>): whose it is (a link to their page among the
 * Users), the whole user agent and IP address, its times, every application it signed in to, and
 * the same menu as its row.
 */
function SessionDetail({ id, slug }: { id: string; slug: string | undefined }) {
  const trpc = useTRPC();
  const session = useQuery(trpc.sessions.get.queryOptions({ id, organization_slug: slug }, { enabled: slug !== undefined }));
  const data = session.data;
  return (
    <>
      <p className="breadcrumb">
        <Link to="/sessions" data-testid="session-detail-back">
          ← Sessions
        </Link>
      </p>
      {session.isError && <ErrorPanel error={session.error} title="Could not load the session" onRetry={() => void session.refetch()} />}
      {(slug === undefined || session.isPending) && !session.isError && (
        <Skeleton label="Loading the session…" testId="session-detail-loading" />
      )}
      {data && slug && (
        <section className="panel" data-testid="session-detail" data-session-id={data.id} data-status={data.status}>
          <div className="panel__header">
            <h2 className="panel__title">
              {data.device}, {data.user.name || data.user.email}
            </h2>
            <div className="panel__actions">
              <SessionActions session={data} slug={slug} />
            </div>
          </div>
          <dl className="facts">
            <dt>User</dt>
            <dd>
              <Link to={`/users/${encodeURIComponent(data.user.id)}`} data-testid="session-detail-user">
                {data.user.name ? `${data.user.name} (${data.user.email})` : data.user.email}
              </Link>
            </dd>
            <dt>Status</dt>
            <dd>
              <span className={`pill ${data.status === 'active' ? 'pill--on' : 'pill--off'}`} data-testid="session-detail-status">
                {data.status}
              </span>
              {data.current && (
                <>
                  {' '}
                  <span className="badge">This browser</span>
                </>
              )}
            </dd>
            <dt>Session ID</dt>
            <dd>
              <Identifier value={data.id} label="session id" testId="session-detail-id" />
            </dd>
            <dt>IP address</dt>
            <dd>{data.ipAddress ? <Identifier value={data.ipAddress} label="IP address" testId="session-detail-ip" /> : '—'}</dd>
            <dt>User agent</dt>
            <dd data-testid="session-detail-user-agent" style={{ overflowWrap: 'anywhere' }}>
              {data.userAgent ?? '—'}
            </dd>
            <dt>Signed in</dt>
            <dd>
              <When at={data.createdAt} empty="—" />
            </dd>
            <dt>Last seen</dt>
            <dd>
              <When at={data.lastSeenAt} empty="—" />
            </dd>
            <dt>{data.status === 'active' ? 'Expires' : 'Ended'}</dt>
            <dd>
              <When at={data.revokedAt ?? data.expiresAt} empty="—" />
            </dd>
            <dt>Applications</dt>
            <dd data-testid="session-detail-applications">
              {data.applications.length === 0
                ? 'none'
                : data.applications.map((app) => (
                    <div key={app.id} data-application-id={app.id}>
                      {app.name}{' '}
                      <span className="muted">
                        first <When at={app.firstSignedInAt} empty="—" format="relative" />, last{' '}
                        <When at={app.lastSignedInAt} empty="—" format="relative" />
                        {app.endedAt && (
                          <>
                            , ended <When at={app.endedAt} empty="—" format="relative" />
                          </>
                        )}
                      </span>
                    </div>
                  ))}
            </dd>
          </dl>
        </section>
      )}
    </>
  );
}

/** The row's "⋯" menu: Revoke session…, confirmed; only for active sessions. */
function SessionActions({ session, slug }: { session: TSession; slug: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const revoke = useMutation(
    trpc.sessions.revoke.mutationOptions({
      onSuccess: () =>
        Promise.all([
          queryClient.invalidateQueries({ queryKey: trpc.sessions.list.queryKey() }),
          queryClient.invalidateQueries({ queryKey: trpc.sessions.get.pathKey() }),
        ]),
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

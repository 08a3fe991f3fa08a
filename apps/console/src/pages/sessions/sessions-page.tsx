import type { TSession } from '@svc/contracts/sessions';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { StatusFilter } from '../../components/status-filter.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;
const STATES = [
  { value: 'active', label: 'Active sessions' },
  { value: 'all', label: 'All, with revoked and expired' },
] as const;

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
        columns={['User', 'Device', 'IP address', 'Applications', 'Signed in', 'Last seen', 'Status', 'Actions']}
        rowKey={(session) => session.id}
        row={(session, organization) => <SessionRow session={session} slug={organization.slug} />}
      />
    </div>
  );
}

function When({ iso }: { iso: string }) {
  return (
    <time dateTime={iso} title={iso}>
      {new Date(iso).toLocaleString()}
    </time>
  );
}

function SessionRow({ session, slug }: { session: TSession; slug: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const revoke = useMutation(
    trpc.sessions.revoke.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.sessions.list.queryKey() }),
    }),
  );
  const who = session.user.name ? `${session.user.name} (${session.user.email})` : session.user.email;

  return (
    <tr data-testid="session-row" data-session-id={session.id} data-email={session.user.email}>
      <td>
        <div data-testid="session-user">{session.user.name || session.user.email}</div>
        {session.user.name && <div className="muted">{session.user.email}</div>}
      </td>
      <td>
        <div data-testid="session-device">{session.device}</div>
        {session.userAgent && (
          <div className="muted" title={session.userAgent}>
            {session.userAgent.length > 60 ? `${session.userAgent.slice(0, 60)}…` : session.userAgent}
          </div>
        )}
      </td>
      <td>
        <code data-testid="session-ip" style={{ whiteSpace: 'nowrap' }}>
          {session.ipAddress ?? '—'}
        </code>
      </td>
      <td data-testid="session-applications">
        {session.applications.length === 0 ? (
          <span className="muted">—</span>
        ) : (
          <ul className="plain-list">
            {session.applications.map((app) => (
              <li key={app.id} data-testid="session-application" data-application-id={app.id}>
                <span title={app.id}>{app.name}</span> <code className="muted">{app.id}</code>
                {app.endedAt && (
                  <span className="muted" data-testid="session-application-ended">
                    {' '}
                    (ended <When iso={app.endedAt} />)
                  </span>
                )}
              </li>
            ))}
          </ul>
        )}
      </td>
      <td>
        <When iso={session.createdAt} />
      </td>
      <td>
        <When iso={session.lastSeenAt} />
      </td>
      <td>
        <span className={`pill ${session.status === 'active' ? 'pill--on' : 'pill--off'}`} data-testid="session-status">
          {session.status}
        </span>{' '}
        {session.current && (
          <span className="badge" data-testid="session-current">
            This browser
          </span>
        )}
      </td>
      <td>
        {session.status === 'active' && (
          <ConfirmButton
            question={`Revoke ${session.current ? 'your own session' : `the session of ${who}`} (${session.device})?`}
            consequence={
              session.current
                ? 'This browser is signed out at once.'
                : 'That browser is signed out at once: its next request is refused on every server.'
            }
            confirmLabel="Revoke"
            disabled={revoke.isPending}
            onConfirm={() => revoke.mutateAsync({ id: session.id, organization_slug: slug }).catch(() => undefined)}
            testId="session-revoke"
          >
            Revoke
          </ConfirmButton>
        )}
        {revoke.isError && <ErrorPanel error={revoke.error} title="Could not revoke the session" />}
      </td>
    </tr>
  );
}

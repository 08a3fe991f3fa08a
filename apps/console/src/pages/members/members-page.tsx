import type { TTenantMember } from '@svc/contracts/tenants';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { Pager, usePager } from '../../components/pager.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;

/** The members of the active organization with their roles, newest first, a page at a time. */
export function MembersPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const pager = usePager();
  const organizationId = active.organization?.id;
  const members = useQuery({
    ...trpc.tenants.member.list.queryOptions(
      { id: organizationId ?? '', limit: PAGE_SIZE, cursor: pager.cursor },
      { enabled: organizationId !== undefined },
    ),
    // Keep the current page on screen while the next one loads.
    placeholderData: keepPreviousData,
  });

  return (
    <div data-testid="page-members">
      <PageHeader
        title="Members"
        description={`People who belong to ${active.organization ? active.organization.name : 'this workspace'}, and the role each holds.`}
      />
      {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
      {active.me && !active.organization && (
        <p className="muted" data-testid="members-no-workspace">
          You are not in a workspace: there are no members to show.
        </p>
      )}
      {members.isError && <ErrorPanel error={members.error} title="Could not load the members" onRetry={() => void members.refetch()} />}
      {(active.isLoading || (organizationId !== undefined && members.isPending)) && !members.isError && (
        <p className="loading" data-testid="members-loading">
          Loading members…
        </p>
      )}
      {members.data && (
        <>
          {members.data.data.length === 0 ? (
            <p className="muted" data-testid="members-empty">
              No members yet.
            </p>
          ) : (
            <table className="data-table" data-testid="members-table" aria-busy={members.isPlaceholderData}>
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Email</th>
                  <th>Role</th>
                  <th>Joined</th>
                </tr>
              </thead>
              <tbody>
                {members.data.data.map((member) => (
                  <MemberRow key={member.userId} member={member} />
                ))}
              </tbody>
            </table>
          )}
          <Pager pager={pager} nextCursor={members.isPlaceholderData ? null : members.data.nextCursor} testId="members-pager" />
        </>
      )}
    </div>
  );
}

function MemberRow({ member }: { member: TTenantMember }) {
  return (
    <tr data-testid="member-row" data-user-id={member.userId}>
      <td data-testid="member-name">{member.name || <span className="muted">(no name)</span>}</td>
      <td data-testid="member-email">{member.email}</td>
      <td>
        <code data-testid="member-role">{member.roleKey}</code>
      </td>
      <td>
        <time dateTime={member.joinedAt} title={member.joinedAt}>
          {new Date(member.joinedAt).toLocaleDateString()}
        </time>
      </td>
    </tr>
  );
}

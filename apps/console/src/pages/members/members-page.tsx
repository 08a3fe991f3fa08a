import type { TTenantMember } from '@svc/contracts/tenants';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;

/** The members of the active organization with their roles, newest first, a page at a time. */
export function MembersPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const pager = usePager();
  const navigate = useNavigate();
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
      <ListPage
        testId="members"
        noun="members"
        workspace={active}
        query={members}
        pager={pager}
        empty={{
          title: 'No members yet.',
          next: 'Invite people on the Invitations page: they appear here once they accept.',
          action: { label: 'Invite someone', onClick: () => void navigate('/invitations') },
        }}
        columns={['Name', 'Email', 'Role', 'Joined']}
        rowKey={(member) => member.userId}
        row={(member) => <MemberRow member={member} />}
      />
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

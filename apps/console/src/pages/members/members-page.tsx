import type { TTenantMember } from '@svc/contracts/tenants';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { columnHelper, whenColumn } from '../../components/data-table.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { emailColumn, roleColumn } from '../../components/person-columns.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useRoleOptions } from '../../lib/roles.ts';
import { useTRPC } from '../../trpc.ts';
import { PeopleTabs } from '../people/people-tabs.tsx';

const PAGE_SIZE = 50;

/** The columns: name and email share the width; the role by its name (its key in `data-role-key`). */
function memberColumns(nameOf: () => (key: string) => string) {
  const column = columnHelper<TTenantMember>();
  return column.columns([
    column.accessor('name', {
      header: 'Name',
      sortFn: 'text',
      // The name opens the person's page among the Users (/users/<id>), where their membership is managed.
      cell: (info) => (
        <Link to={`/users/${encodeURIComponent(info.row.original.userId)}`} data-testid="member-name" title={info.getValue()}>
          {info.getValue() || '(no name)'}
        </Link>
      ),
    }),
    emailColumn<TTenantMember>({ testId: 'member-email' }),
    roleColumn<TTenantMember>({ testId: 'member-role', nameOf }),
    whenColumn(column, 'joinedAt', 'Joined'),
  ]);
}

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
  const roles = useRoleOptions(active.organization?.slug);
  // Columns are made once; the role cells read the latest names through this.
  const [latest] = useState(() => ({ nameOf: roles.nameOf }));
  latest.nameOf = roles.nameOf;
  const [columns] = useState(() => memberColumns(() => latest.nameOf));

  return (
    <div data-testid="page-members">
      <PageHeader
        title="People"
        description={`People who belong to ${active.organization ? active.organization.name : 'this workspace'}, and the role each holds, and who is invited. Change roles and memberships on the Users page.`}
      />
      <PeopleTabs />
      <ListPage
        testId="members"
        noun="members"
        workspace={active}
        query={members}
        pager={pager}
        empty={{
          title: 'No members yet.',
          next: 'Invite people on the Invitations tab: they appear here once they accept.',
          action: { label: 'Invite someone', onClick: () => void navigate('/people/invitations') },
        }}
        rowKey={(member) => member.userId}
        table={{
          columns,
          rowAttributes: (member) => ({ 'data-testid': 'member-row', 'data-user-id': member.userId }),
          minWidth: '40rem',
        }}
      />
    </div>
  );
}

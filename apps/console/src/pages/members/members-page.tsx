import { EmptyState } from '../../components/empty-state.tsx';
import { PageHeader } from '../../components/page-header.tsx';

export function MembersPage() {
  return (
    <div data-testid="page-members">
      <PageHeader title="Members" description="People who can administer this workspace." />
      <EmptyState
        capability="tenant member management"
        description="List the members of this workspace, change their roles and remove access."
      />
    </div>
  );
}

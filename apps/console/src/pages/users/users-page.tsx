import { EmptyState } from '../../components/empty-state.tsx';
import { PageHeader } from '../../components/page-header.tsx';

export function UsersPage() {
  return (
    <div data-testid="page-users">
      <PageHeader title="Users" description="End users who signed in to your applications." />
      <EmptyState capability="user management" description="Search users, inspect their profile and sessions, and disable accounts." />
    </div>
  );
}

import { EmptyState } from '../../components/empty-state.tsx';
import { PageHeader } from '../../components/page-header.tsx';

export function SessionsPage() {
  return (
    <div data-testid="page-sessions">
      <PageHeader title="Sessions" description="Active sign-in sessions." />
      <EmptyState
        capability="session management"
        description="See where users are signed in and revoke sessions immediately, across every api process."
      />
    </div>
  );
}

import { EmptyState } from '../../components/empty-state.tsx';
import { PageHeader } from '../../components/page-header.tsx';

export function ApplicationsPage() {
  return (
    <div data-testid="page-applications">
      <PageHeader title="Applications" description="Projects that sign users in through svc." />
      <EmptyState
        capability="application management"
        description="Create applications, copy their publishable keys, rotate secret keys and edit redirect and origin allowlists."
      />
    </div>
  );
}

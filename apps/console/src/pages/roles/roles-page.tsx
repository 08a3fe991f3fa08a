import { EmptyState } from '../../components/empty-state.tsx';
import { PageHeader } from '../../components/page-header.tsx';

export function RolesPage() {
  return (
    <div data-testid="page-roles">
      <PageHeader title="Roles" description="Named sets of permissions." />
      <EmptyState capability="roles and permissions" description="Define roles from the permission catalog and assign them to members." />
    </div>
  );
}

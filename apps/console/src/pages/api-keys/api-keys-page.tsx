import { EmptyState } from '../../components/empty-state.tsx';
import { PageHeader } from '../../components/page-header.tsx';

export function ApiKeysPage() {
  return (
    <div data-testid="page-api-keys">
      <PageHeader title="API keys" description="Keys for backend services calling svc." />
      <EmptyState capability="tenant API keys" description="Create scoped keys (the secret is shown once), rotate and revoke them." />
    </div>
  );
}

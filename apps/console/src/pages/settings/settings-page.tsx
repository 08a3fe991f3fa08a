import { EmptyState } from '../../components/empty-state.tsx';
import { PageHeader } from '../../components/page-header.tsx';

export function SettingsPage() {
  return (
    <div data-testid="page-settings">
      <PageHeader title="Settings" description="Workspace settings." />
      <EmptyState
        capability="workspace settings"
        description="Rename the workspace, manage webhooks, subscription plan and billing handoff."
      />
    </div>
  );
}

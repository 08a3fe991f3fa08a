import { EmptyState } from '../../components/empty-state.tsx';
import { PageHeader } from '../../components/page-header.tsx';

export function AuditLogPage() {
  return (
    <div data-testid="page-audit-log">
      <PageHeader title="Audit log" description="An append-only record of changes." />
      <EmptyState
        capability="the audit log"
        description="Browse who changed what and when, filter by actor and action, and export the result."
      />
    </div>
  );
}

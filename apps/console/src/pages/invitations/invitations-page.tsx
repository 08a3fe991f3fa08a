import { EmptyState } from '../../components/empty-state.tsx';
import { PageHeader } from '../../components/page-header.tsx';

export function InvitationsPage() {
  return (
    <div data-testid="page-invitations">
      <PageHeader title="Invitations" description="Pending invitations to this workspace." />
      <EmptyState capability="invitations" description="Invite people by email, copy one-time invite links and track delivery." />
    </div>
  );
}

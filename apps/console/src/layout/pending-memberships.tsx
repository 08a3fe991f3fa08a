import type { TMeResponse } from '@svc/contracts/me';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ErrorPanel } from '../components/error-panel.tsx';
import { useTRPC } from '../trpc.ts';

/**
 * Organizations that added the signed-in person and wait for their answer (GET /v1/me
 * `pendingMemberships`). Nothing of the organization is open to them, and nothing of them is shown
 * to the organization, until they accept here.
 */
export function PendingMemberships() {
  const trpc = useTRPC();
  const me = useQuery(trpc.me.get.queryOptions());
  const pending = me.data?.pendingMemberships ?? [];
  if (pending.length === 0) {
    return null;
  }
  return (
    <section className="panel" data-testid="pending-memberships">
      <h2 className="panel__title">Organizations waiting for your answer</h2>
      <ul>
        {pending.map((m) => (
          <PendingMembership key={m.organization.id} membership={m} />
        ))}
      </ul>
    </section>
  );
}

function PendingMembership({ membership }: { membership: TMeResponse['pendingMemberships'][number] }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  // Accepting changes what the session may open: every page is fetched again.
  const onSuccess = () => queryClient.invalidateQueries();
  const accept = useMutation(trpc.me.acceptMembership.mutationOptions({ onSuccess }));
  const decline = useMutation(trpc.me.declineMembership.mutationOptions({ onSuccess }));
  const busy = accept.isPending || decline.isPending;
  const input = { organizationId: membership.organization.id };
  return (
    <li data-testid="pending-membership" data-organization-slug={membership.organization.slug}>
      <strong>{membership.organization.name}</strong> added you as <code>{membership.roleKey}</code>.{' '}
      <button
        type="button"
        className="button button--primary"
        disabled={busy}
        onClick={() => accept.mutate(input)}
        data-testid="pending-accept"
      >
        Accept
      </button>{' '}
      <button type="button" className="button" disabled={busy} onClick={() => decline.mutate(input)} data-testid="pending-decline">
        Decline
      </button>
      {accept.isError && <ErrorPanel error={accept.error} title="Could not accept" />}
      {decline.isError && <ErrorPanel error={decline.error} title="Could not decline" />}
    </li>
  );
}

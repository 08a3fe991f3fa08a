import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';
import { Adapters, Connections } from './connections.tsx';
import { Mappings } from './mappings.tsx';
import { SyncLogs } from './sync-logs.tsx';

/**
 * Billing handoff of the active organization: what this svc's environment configures for each
 * provider (never a key), the organization's connections (connect or change one in a dialog), its
 * event-type mappings (add or re-point one in a dialog), and the sync logs with a status filter and
 * Retry for failed or skipped ones. svc never charges: the providers do, from what it hands them.
 */
export function BillingPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const organization = active.organization;
  const [addingMapping, setAddingMapping] = useState(false);
  const providers = useQuery(
    trpc.billing.provider.list.queryOptions(
      { id: organization?.id ?? '' },
      { enabled: organization !== null && organization !== undefined },
    ),
  );

  return (
    <div data-testid="page-billing">
      <PageHeader
        title="Billing"
        description="Hand usage to your payment provider. svc records and syncs usage; the provider charges, invoices, taxes and refunds."
      />
      {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
      {!active.isLoading && !active.error && !organization && (
        <p className="muted" data-testid="billing-no-workspace">
          You are not in a workspace: there is no billing to show. Accept an invitation to an organization, or ask an admin of one to add
          you.
        </p>
      )}
      {providers.isError && (
        <ErrorPanel error={providers.error} title="Could not load the billing providers" onRetry={() => void providers.refetch()} />
      )}
      {(active.isLoading || (organization && providers.isPending)) && !providers.isError && (
        <Skeleton label="Loading billing…" testId="billing-loading" lines={6} />
      )}
      {providers.data && organization && (
        <div className="list-page">
          <Adapters adapters={providers.data.adapters} />
          <Connections organizationSlug={organization.slug} records={providers.data.data} adapters={providers.data.adapters} />
          <Mappings
            organizationSlug={organization.slug}
            adapters={providers.data.adapters}
            adding={addingMapping}
            onAddingChange={setAddingMapping}
          />
          <SyncLogs organizationId={organization.id} organizationSlug={organization.slug} onAddMapping={() => setAddingMapping(true)} />
        </div>
      )}
    </div>
  );
}

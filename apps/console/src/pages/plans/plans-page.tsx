import type { TSubscriptionPlan } from '@svc/contracts/subscriptions';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { Chips } from '../../components/chips.tsx';
import { actionsColumn, columnHelper, whenColumn } from '../../components/data-table.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';
import { CreatePlanDialog, EditPlanDialog } from './plan-dialogs.tsx';

const PAGE_SIZE = 50;

/**
 * The list's columns: the name takes what the sized columns leave; the key is an Identifier;
 * limits are listed whole (a plan limits a handful of event types). Platform admins get the "⋯"
 * menu; plans are never deleted (organizations on them keep them), so it only edits.
 */
function planColumns(onEdit: ((plan: TSubscriptionPlan) => void) | null) {
  const column = columnHelper<TSubscriptionPlan>();
  return column.columns([
    column.accessor('name', {
      header: 'Name',
      sortFn: 'text',
      cell: (info) => (
        <span title={info.getValue()}>
          <span data-testid="plan-name">{info.getValue()}</span>{' '}
          {info.row.original.isDefault && (
            <span className="badge" data-testid="plan-default" title="New organizations get this plan">
              Default
            </span>
          )}
        </span>
      ),
    }),
    column.accessor('key', {
      header: 'Key',
      sortFn: 'text',
      meta: { width: '8rem' },
      cell: (info) => <Identifier value={info.getValue()} label="plan key" testId="plan-key" />,
    }),
    column.accessor((plan) => plan.seatLimit ?? Number.POSITIVE_INFINITY, {
      id: 'seats',
      header: 'Seats',
      meta: { width: '6rem', align: 'end' },
      cell: (info) => (
        <span data-testid="plan-seats">{info.row.original.seatLimit === null ? 'unlimited' : info.row.original.seatLimit}</span>
      ),
    }),
    column.accessor((plan) => Object.keys(plan.usageLimits).join(' '), {
      id: 'usage-limits',
      header: 'Usage limits per month',
      enableSorting: false,
      meta: { width: '15rem' },
      cell: (info) => {
        const limits = Object.entries(info.row.original.usageLimits);
        return (
          <Chips
            names={limits.map(([type, quantity]) => `${type} ${quantity.toLocaleString()}`)}
            testId="plan-usage-limits"
            empty="unlimited"
          />
        );
      },
    }),
    column.accessor((plan) => plan.features.join(' '), {
      id: 'features',
      header: 'Features',
      enableSorting: false,
      meta: {
        width: '9rem',
        description: 'What the plan includes beside its limits: the check API and the entitlements token scope answer them',
      },
      cell: (info) => {
        const features = info.row.original.features;
        return <Chips names={features} testId="plan-features" />;
      },
    }),
    column.accessor((plan) => plan.usageThresholds.join(' '), {
      id: 'alerts',
      header: 'Alerts',
      enableSorting: false,
      meta: {
        width: '10.5rem',
        description: "usage.threshold_reached is recorded when an event type's month reaches each percentage of its limit",
      },
      cell: (info) => {
        const thresholds = info.row.original.usageThresholds;
        return (
          <span data-testid="plan-usage-thresholds" title={thresholds.map((t) => `${t}%`).join(', ')}>
            {thresholds.length === 0 ? <span className="muted">none</span> : thresholds.map((t) => `${t}%`).join(' · ')}
          </span>
        );
      },
    }),
    whenColumn(column, 'createdAt', 'Created'),
    ...(onEdit
      ? [
          actionsColumn(column, (plan) => (
            <RowActions
              name={plan.name}
              testId="plan-actions"
              actions={[{ label: 'Edit…', testId: 'plan-edit', onSelect: () => onEdit(plan) }]}
            />
          )),
        ]
      : []),
  ]);
}

/**
 * Subscription plans: what each allows (seats, usage per event type per month) and which one new
 * organizations get. Everyone signed in sees them; platform admins create and edit them (the API
 * refuses anyone else with 403, whatever this page shows). There is no deleting a plan.
 */
export function PlansPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const pager = usePager();
  const isPlatformAdmin = active.me?.isPlatformAdmin === true;
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<TSubscriptionPlan | null>(null);
  const plans = useQuery({
    ...trpc.subscriptions.plan.list.queryOptions({ limit: PAGE_SIZE, cursor: pager.cursor }),
    placeholderData: keepPreviousData,
  });
  // Whether the account is a platform admin is known once `me` has loaded: the menu column follows it.
  const columns = useMemo(() => planColumns(isPlatformAdmin ? setEditing : null), [isPlatformAdmin]);

  return (
    <div data-testid="page-plans">
      <PageHeader
        title="Plans"
        description="Subscription plans: seats and monthly usage limits per event type. New organizations get the default plan, active."
        actions={isPlatformAdmin && <CreatePlanDialog open={creating} onOpenChange={setCreating} onCreated={pager.reset} />}
      />
      {active.me && !isPlatformAdmin && (
        <p className="muted" data-testid="plans-read-only">
          Only platform admins create and change plans.
        </p>
      )}
      {editing && <EditPlanDialog key={editing.id} plan={editing} onClose={() => setEditing(null)} />}
      <ListPage
        testId="plans"
        noun="plans"
        title="Plans"
        query={plans}
        pager={pager}
        empty={
          isPlatformAdmin
            ? {
                title: 'No plans yet.',
                next: 'Create one: new organizations need a default plan.',
                action: { label: 'Create plan', onClick: () => setCreating(true) },
              }
            : { title: 'No plans yet.', next: 'A platform admin creates them.' }
        }
        rowKey={(plan) => plan.id}
        table={{
          columns,
          rowAttributes: (plan) => ({ 'data-testid': 'plan-row', 'data-plan-key': plan.key, 'data-plan-id': plan.id }),
          // The sized columns (59.5rem since Features) plus room for the name on a phone.
          minWidth: '66rem',
        }}
      />
    </div>
  );
}

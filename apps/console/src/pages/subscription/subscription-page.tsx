import { BLOCKING_STATUSES as BLOCKING, type TSubscription, type TSubscriptionStatus } from '@svc/contracts/subscriptions';
import { useQuery } from '@tanstack/react-query';
import { type ReactNode, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';
import { ChangeSubscriptionDialog } from './change-subscription-dialog.tsx';

function StatusPill({ status }: { status: TSubscriptionStatus }) {
  return (
    <span
      className={BLOCKING.has(status) ? 'pill' : 'pill pill--on'}
      style={BLOCKING.has(status) ? { background: 'var(--danger-soft)', color: 'var(--danger)' } : undefined}
      data-testid="subscription-status"
      data-status={status}
    >
      {status}
    </span>
  );
}

/**
 * The organization's subscription (docs/api.md "Subscriptions"): plan, status, seats used against the limit and
 * this month's usage against each limit, and what changes answer right now (402 or fine).
 * Platform admins change plan, seats and status from "Change subscription"; they pick the
 * organization with `?organization=<slug>` (the Organizations page's "Manage subscription" links
 * there; their own platform workspace has no subscription).
 */
export function SubscriptionPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const [search, setSearch] = useSearchParams();
  const isPlatformAdmin = active.me?.isPlatformAdmin === true;
  const chosen = search.get('organization') ?? undefined;
  const onPlatform = active.organization?.kind === 'platform';
  const slug = chosen ?? (onPlatform ? undefined : active.organization?.slug);
  const subscription = useQuery(
    trpc.subscriptions.get.queryOptions({ organization_slug: slug }, { enabled: slug !== undefined, staleTime: 0 }),
  );

  return (
    <div data-testid="page-subscription">
      <PageHeader
        title="Subscription"
        description="The plan, status, seats and this month's usage of the organization. Changes to its applications, users, webhooks and usage are refused (402) while it is inactive, cancelled, expired or over a limit; reads always work."
        actions={
          isPlatformAdmin &&
          subscription.data && <ChangeSubscriptionDialog key={subscription.data.organization.slug} subscription={subscription.data} />
        }
      />
      {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
      {isPlatformAdmin && (
        <OrganizationPicker
          key={slug ?? ''}
          current={slug}
          onPick={(next) => setSearch(next ? { organization: next } : {})}
          hint={
            onPlatform && chosen === undefined ? (
              <>
                You are in the platform workspace, which has no subscription. Enter the slug of the organization to manage, or choose Manage
                subscription in its row on the <Link to="/organizations">Organizations</Link> page.
              </>
            ) : undefined
          }
        />
      )}
      {subscription.isError && (
        <ErrorPanel error={subscription.error} title="Could not load the subscription" onRetry={() => void subscription.refetch()} />
      )}
      {slug !== undefined && subscription.isPending && !subscription.isError && (
        <Skeleton label="Loading the subscription…" testId="subscription-loading" lines={6} />
      )}
      {subscription.data && (
        <div style={{ display: 'grid', gap: 16, marginTop: 16 }}>
          <Overview subscription={subscription.data} />
          <UsageTable subscription={subscription.data} />
        </div>
      )}
    </div>
  );
}

function OrganizationPicker({
  current,
  onPick,
  hint,
}: {
  current: string | undefined;
  onPick: (slug: string | undefined) => void;
  hint?: ReactNode;
}) {
  const [value, setValue] = useState(current ?? '');
  return (
    <section className="panel" data-testid="subscription-picker">
      <h2 className="panel__title">Organization</h2>
      {hint && (
        <p className="muted" data-testid="subscription-picker-hint">
          {hint}
        </p>
      )}
      <form
        className="form-row"
        onSubmit={(event) => {
          event.preventDefault();
          onPick(value.trim() === '' ? undefined : value.trim());
        }}
      >
        <label className="form-field">
          <span>Organization slug</span>
          <input value={value} onChange={(e) => setValue(e.target.value)} placeholder="acme" data-testid="subscription-picker-slug" />
        </label>
        <button type="submit" className="button" data-testid="subscription-picker-open">
          Open
        </button>
      </form>
    </section>
  );
}

function Overview({ subscription }: { subscription: TSubscription }) {
  const { plan, seats, blocked, organization, usage } = subscription;
  return (
    <section className="panel" data-testid="subscription-overview" data-organization-slug={organization.slug}>
      <h2 className="panel__title">{organization.name}</h2>
      {blocked ? (
        <div
          role="status"
          data-testid="subscription-blocked"
          data-code={blocked.code}
          style={{
            margin: '0 0 12px',
            padding: '10px 12px',
            background: 'var(--danger-soft)',
            borderLeft: '4px solid var(--danger)',
            borderRadius: 6,
          }}
        >
          <strong>Changes are refused with 402 </strong>
          <code data-testid="subscription-blocked-code">{blocked.code}</code>
          <p style={{ margin: '4px 0 0' }} data-testid="subscription-blocked-message">
            {blocked.message}
          </p>
          {blocked.upgradeUrl && (
            <p style={{ margin: '4px 0 0' }}>
              <a href={blocked.upgradeUrl} target="_blank" rel="noopener noreferrer" data-testid="subscription-upgrade-link">
                Change the plan
              </a>
            </p>
          )}
        </div>
      ) : (
        <p className="muted" data-testid="subscription-ok">
          In good standing: changes to applications, users, webhooks and usage are accepted.
        </p>
      )}
      <dl className="facts">
        <dt>Plan</dt>
        <dd>
          <span data-testid="subscription-plan-name">{plan.name}</span>{' '}
          <Identifier value={plan.key} label="plan key" testId="subscription-plan-key" />{' '}
          <Link to="/plans" className="muted">
            (plans)
          </Link>
        </dd>
        <dt>Status</dt>
        <dd>
          <StatusPill status={subscription.status} />
        </dd>
        <dt>Seats</dt>
        <dd data-testid="subscription-seats" data-over-limit={seats.overLimit ? 'true' : 'false'}>
          <span data-testid="subscription-seats-used">{seats.used}</span> used of{' '}
          <span data-testid="subscription-seats-limit">{seats.limit === null ? 'unlimited' : seats.limit}</span>
          {seats.bought !== null
            ? ' (seats bought for this organization)'
            : ` (the plan's ${plan.seatLimit === null ? 'unlimited seats' : 'seat limit'})`}
          {seats.overLimit && (
            <span className="badge" style={{ marginLeft: 8, background: 'var(--danger-soft)', color: 'var(--danger)' }}>
              over the limit
            </span>
          )}
        </dd>
        <dt>Usage period</dt>
        <dd data-testid="subscription-period" data-period-start={usage.periodStart} data-period-end={usage.periodEnd}>
          <When at={usage.periodStart} empty="—" /> to <When at={usage.periodEnd} empty="—" />{' '}
          <span className="muted">(the calendar month, UTC)</span>
        </dd>
        <dt>Last changed</dt>
        <dd data-testid="subscription-updated">
          <When at={subscription.updatedAt} empty="—" />
        </dd>
        <dt>Organization</dt>
        <dd>
          <Identifier value={organization.slug} label="organization slug" testId="subscription-organization-slug" />
        </dd>
      </dl>
    </section>
  );
}

function UsageTable({ subscription }: { subscription: TSubscription }) {
  const { usage } = subscription;
  return (
    <section className="panel" data-testid="subscription-usage">
      <h2 className="panel__title">Usage this month</h2>
      {usage.limits.length === 0 ? (
        <p className="muted" data-testid="subscription-usage-unlimited">
          The plan limits no event type: usage is unlimited.
        </p>
      ) : (
        <table className="data-table">
          <thead>
            <tr>
              <th>Event type</th>
              <th>Used</th>
              <th>Limit</th>
              <th>Remaining</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {usage.limits.map((row) => (
              <tr
                key={row.eventType}
                data-testid="subscription-usage-row"
                data-event-type={row.eventType}
                data-over-limit={row.overLimit ? 'true' : 'false'}
              >
                <td>
                  <code>{row.eventType}</code>
                </td>
                <td data-testid="subscription-usage-used">{row.used.toLocaleString()}</td>
                <td data-testid="subscription-usage-limit">{row.limit.toLocaleString()}</td>
                <td>{row.remaining.toLocaleString()}</td>
                <td>
                  {row.overLimit && (
                    <span className="badge" style={{ background: 'var(--danger-soft)', color: 'var(--danger)' }}>
                      over the limit
                    </span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

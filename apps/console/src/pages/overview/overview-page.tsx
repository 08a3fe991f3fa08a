import type { TTenantOverview } from '@svc/contracts/tenants';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { parseError } from '../../lib/errors.ts';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

/** The getting-started steps, in order: which overview flag ticks each, and the page that does it. */
const CHECKLIST: { key: keyof TTenantOverview['checklist']; label: string; path: string; action: string }[] = [
  { key: 'applicationCreated', label: 'Create an application', path: '/applications', action: 'Open Applications' },
  { key: 'signInTried', label: 'Try sign-in', path: '/applications', action: 'Try sign-in from an application' },
  { key: 'memberInvited', label: 'Invite someone', path: '/people/invitations', action: 'Open Invitations' },
  { key: 'webhookAdded', label: 'Add a webhook', path: '/webhooks', action: 'Open Webhooks' },
];

/**
 * The active organization at a glance (counts, this month's usage against the plan, a
 * getting-started checklist, recent audit activity), then how this svc deployment is configured.
 */
export function OverviewPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const config = useQuery(trpc.service.config.queryOptions());
  const organization = active.organization?.kind === 'tenant' ? active.organization : null;

  return (
    <div data-testid="overview">
      <PageHeader
        title="Overview"
        description={
          // Nothing until the workspace is known: the platform wording is for the platform workspace only.
          active.isLoading
            ? undefined
            : organization
              ? `${organization.name} at a glance, and how this svc deployment is configured.`
              : 'How this svc deployment is configured.'
        }
        descriptionPending={active.isLoading}
      />
      {organization && <OrganizationOverview organizationId={organization.id} organizationSlug={organization.slug} />}
      {config.isPending && <Skeleton label="Loading the service configuration…" testId="overview-loading" />}
      {config.isError && (
        <ErrorPanel error={config.error} title="Could not load the service configuration" onRetry={() => void config.refetch()} />
      )}
      {config.data && (
        <>
          <div className="card-grid">
            <section className="card">
              <h2 className="card__label">API version</h2>
              <p className="card__value" data-testid="service-api-version">
                {config.data.apiVersion}
              </p>
              <p className="card__hint">{config.data.service}</p>
            </section>
            <section className="card">
              <h2 className="card__label">Identity engine</h2>
              <p className="card__value" data-testid="service-engine-kind">
                {config.data.engine.name}
              </p>
              <div className="card__hint">
                <Identifier value={config.data.engine.issuer} label="issuer URL" testId="service-engine-issuer" />
                <p data-testid="service-engine-preset">
                  svc talks to it with the {config.data.engine.kind} preset
                  {config.data.engine.name === 'development engine' ? ' (set ENGINE_ISSUER to use your own engine)' : ''}.
                </p>
              </div>
            </section>
            <section className="card">
              <h2 className="card__label">Keyless development</h2>
              <p className="card__value" data-testid="service-keyless">
                <span className={config.data.keyless.enabled ? 'pill pill--on' : 'pill pill--off'}>
                  {config.data.keyless.enabled ? 'Enabled' : 'Disabled'}
                </span>
              </p>
              <p className="card__hint">
                {config.data.keyless.enabled ? 'Apps can start without a publishable key.' : 'Every app needs a publishable key.'}
              </p>
            </section>
          </div>

          <section className="panel">
            <h2 className="panel__title">Endpoints</h2>
            <dl className="facts">
              <dt>Public URL</dt>
              <dd>
                <Identifier value={config.data.publicUrl} label="public URL" testId="service-public-url" />
              </dd>
              <dt>API reference</dt>
              <dd className="overview__link-fact">
                <Identifier value={config.data.docsUrl} label="API reference URL" />
                <a href={config.data.docsUrl} data-testid="service-docs-link">
                  Open the API reference
                </a>
              </dd>
              <dt>OpenAPI document</dt>
              <dd className="overview__link-fact">
                <Identifier value={config.data.openapiUrl} label="OpenAPI document URL" />
                <a href={config.data.openapiUrl} data-testid="service-openapi-link">
                  Open the OpenAPI document
                </a>
              </dd>
              <dt>Client configuration</dt>
              <dd>
                <Identifier value={config.data.clientConfigUrl} label="client configuration URL" testId="service-client-config-url" />
              </dd>
            </dl>
          </section>
        </>
      )}
    </div>
  );
}

/** Counts, usage, checklist and recent activity of one organization (tenants.overview, auditLogs.list). */
function OrganizationOverview({ organizationId, organizationSlug }: { organizationId: string; organizationSlug: string }) {
  const trpc = useTRPC();
  const overview = useQuery(trpc.tenants.overview.queryOptions({ id: organizationId }, { staleTime: 0 }));
  const activity = useQuery(trpc.auditLogs.list.queryOptions({ organization_slug: organizationSlug, limit: 5 }));
  // A member who may not read the audit log sees no activity card at all, not an error.
  const activityForbidden = activity.isError && parseError(activity.error).code === 'forbidden';

  return (
    <div data-testid="organization-overview" className="overview">
      {overview.isPending && <Skeleton label="Loading the organization's overview…" testId="organization-overview-loading" />}
      {overview.isError && (
        <ErrorPanel error={overview.error} title="Could not load the organization's overview" onRetry={() => void overview.refetch()} />
      )}
      {overview.data && (
        <>
          <div className="card-grid">
            <CountCard label="Members" value={overview.data.counts.members} testId="overview-members" to="/people/members" />
            <CountCard label="Applications" value={overview.data.counts.applications} testId="overview-applications" to="/applications" />
            <CountCard
              label="Active sessions"
              value={overview.data.counts.activeSessions}
              testId="overview-active-sessions"
              to="/sessions"
            />
            <CountCard label="Usage events this month" value={overview.data.usage.events} testId="overview-usage-events" to="/usage" />
          </div>
          <div className="overview__columns">
            <Checklist checklist={overview.data.checklist} />
            <UsageLimits usage={overview.data.usage} />
          </div>
        </>
      )}
      {!activityForbidden && (
        <section className="panel" data-testid="overview-activity" aria-labelledby="overview-activity-title">
          <h2 className="panel__title" id="overview-activity-title">
            Recent activity
          </h2>
          {activity.isPending && <Skeleton label="Loading recent activity…" lines={3} />}
          {activity.isError && (
            <ErrorPanel error={activity.error} title="Could not load recent activity" onRetry={() => void activity.refetch()} />
          )}
          {activity.data &&
            (activity.data.data.length === 0 ? (
              <p className="muted">Nothing recorded yet.</p>
            ) : (
              <ul className="overview__activity">
                {activity.data.data.map((entry) => (
                  <li key={entry.id} data-testid="overview-activity-entry" data-action={entry.action}>
                    <Identifier value={entry.action} label="action" copy={false} />
                    <span className="overview__actor">{entry.actor.label ?? entry.actor.type}</span>
                    <When at={entry.createdAt} empty="—" format="relative" />
                  </li>
                ))}
              </ul>
            ))}
          {activity.data && (
            <p className="overview__more">
              <Link to="/audit-log">Open the audit log</Link>
            </p>
          )}
        </section>
      )}
    </div>
  );
}

function CountCard({ label, value, testId, to }: { label: string; value: number; testId: string; to: string }) {
  return (
    <section className="card">
      <h2 className="card__label">{label}</h2>
      <p className="card__value" data-testid={testId}>
        {value.toLocaleString()}
      </p>
      <p className="card__hint">
        <Link to={to}>View {label.toLowerCase()}</Link>
      </p>
    </section>
  );
}

/** Each step ticks itself from what the organization holds; an open step links to the page that does it. */
function Checklist({ checklist }: { checklist: TTenantOverview['checklist'] }) {
  const done = CHECKLIST.filter((item) => checklist[item.key]).length;
  return (
    <section className="panel" data-testid="overview-checklist" aria-labelledby="overview-checklist-title">
      <h2 className="panel__title" id="overview-checklist-title">
        Getting started ({done} of {CHECKLIST.length} done)
      </h2>
      <ul className="checklist">
        {CHECKLIST.map((item) => {
          const ticked = checklist[item.key];
          return (
            <li
              key={item.key}
              className={ticked ? 'checklist__item checklist__item--done' : 'checklist__item'}
              data-testid={`checklist-${item.key}`}
              data-done={ticked ? 'true' : 'false'}
            >
              <span className="checklist__mark" aria-hidden="true">
                {ticked ? '✓' : '○'}
              </span>
              <span className="checklist__label">
                {item.label}
                <span className="sr-only">{ticked ? ' (done)' : ' (not done yet)'}</span>
              </span>
              {!ticked && (
                <Link className="checklist__action" to={item.path} data-testid={`checklist-${item.key}-link`}>
                  {item.action}
                </Link>
              )}
            </li>
          );
        })}
      </ul>
    </section>
  );
}

/** This month's quantity of each limited event type against the plan's limit. */
function UsageLimits({ usage }: { usage: TTenantOverview['usage'] }) {
  return (
    <section className="panel" data-testid="overview-usage" aria-labelledby="overview-usage-title">
      <h2 className="panel__title" id="overview-usage-title">
        This month's usage against the plan
      </h2>
      {usage.limits.length === 0 ? (
        <p className="muted" data-testid="overview-usage-unlimited">
          The plan limits no usage: {usage.events.toLocaleString()} events recorded this month.
        </p>
      ) : (
        <ul className="usage-limits">
          {usage.limits.map((limit) => {
            const ratio = limit.limit > 0 ? Math.min(1, limit.quantity / limit.limit) : 1;
            return (
              <li key={limit.eventType} className="usage-limits__item" data-testid="overview-usage-limit" data-event-type={limit.eventType}>
                <div className="usage-limits__head">
                  <Identifier value={limit.eventType} label="event type" copy={false} />
                  <span className="usage-limits__numbers">
                    {limit.quantity.toLocaleString()} of {limit.limit.toLocaleString()}
                  </span>
                </div>
                <meter
                  className="usage-limits__meter"
                  min={0}
                  max={limit.limit}
                  value={Math.min(limit.quantity, limit.limit)}
                  aria-label={`${limit.eventType}: ${limit.quantity} of ${limit.limit}`}
                  data-over={ratio >= 1 ? 'true' : undefined}
                />
              </li>
            );
          })}
        </ul>
      )}
    </section>
  );
}

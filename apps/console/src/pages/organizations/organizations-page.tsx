import type { TTenantListItem } from '@svc/contracts/tenants';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { actionsColumn, columnHelper, whenColumn } from '../../components/data-table.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { useActiveOrganization, useOpenOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;
/** Typing pauses this long before the list is asked again. */
const SEARCH_DELAY_MS = 250;

/** The Subscription page with this organization chosen (its `?organization=` picks it). */
export function subscriptionPath(slug: string): string {
  return `/subscription?${new URLSearchParams({ organization: slug })}`;
}

/** An organization's own page in the console (platform admins), by its id. */
export const organizationPath = (id: string) => `/organizations/${encodeURIComponent(id)}`;

/**
 * Open switches the console's workspace to the organization (its Overview); the "⋯" menu leads to
 * what a platform admin manages for it without switching: its subscription.
 */
function organizationColumns(open: (slug: string) => Promise<void>, go: (path: string) => void) {
  const column = columnHelper<TTenantListItem>();
  return column.columns([
    column.accessor('name', {
      header: 'Name',
      sortFn: 'text',
      cell: (info) => (
        // The name opens the organization's page (/organizations/<id>) without switching to it.
        <Link to={organizationPath(info.row.original.id)} data-testid="organization-name" title={info.getValue()}>
          {info.getValue()}
        </Link>
      ),
    }),
    column.accessor('slug', {
      header: 'Slug',
      sortFn: 'text',
      meta: { width: '11rem' },
      cell: (info) => <Identifier value={info.getValue()} label="organization slug" testId="organization-slug" />,
    }),
    column.accessor((tenant) => tenant.summary?.subscription?.plan.name ?? '', {
      id: 'plan',
      header: 'Plan',
      sortFn: 'text',
      meta: { width: '10rem' },
      cell: (info) => <span data-testid="organization-plan">{info.getValue() || '—'}</span>,
    }),
    column.accessor((tenant) => tenant.summary?.memberCount ?? 0, {
      id: 'members',
      header: 'Members',
      meta: { width: '7rem', align: 'end' },
      cell: (info) => <span data-testid="organization-members">{info.getValue()}</span>,
    }),
    whenColumn(column, 'createdAt', 'Created'),
    column.accessor((tenant) => tenant.summary?.subscription?.status ?? '', {
      id: 'status',
      header: 'Status',
      sortFn: 'text',
      meta: { width: '7rem' },
      cell: (info) => {
        const status = info.getValue();
        return status ? (
          <span className={`pill ${status === 'active' ? 'pill--on' : 'pill--off'}`} data-testid="organization-status">
            {status}
          </span>
        ) : (
          <span className="muted" data-testid="organization-status">
            —
          </span>
        );
      },
    }),
    actionsColumn(
      column,
      (tenant) => (
        <span className="row-buttons">
          <button
            type="button"
            className="button"
            aria-label={`Open ${tenant.name}`}
            data-testid="organization-open"
            onClick={() => void open(tenant.slug)}
          >
            Open
          </button>
          <RowActions
            name={tenant.name}
            testId="organization-actions"
            actions={[
              {
                label: 'Manage subscription',
                testId: 'organization-manage-subscription',
                onSelect: () => go(subscriptionPath(tenant.slug)),
              },
            ]}
          />
        </span>
      ),
      { width: '8.5rem' },
    ),
  ]);
}

/**
 * Platform admins: every organization, searched by name or slug, each one a click from its page
 * (/organizations/<id>) and from its Overview (Open).
 */
export function OrganizationsPage() {
  const active = useActiveOrganization();
  const selected = useParams().id ?? null;
  return (
    <div data-testid="page-organizations">
      <PageHeader title="Organizations" description="Every organization on this svc deployment. Platform admins only." />
      {active.error && <ErrorPanel error={active.error} title="Could not load your account" />}
      {active.isLoading && <Skeleton label="Loading organizations…" testId="organizations-loading" />}
      {active.me && !active.me.isPlatformAdmin && <Refusal />}
      {active.me?.isPlatformAdmin && (selected ? <OrganizationDetail id={selected} /> : <OrganizationsList />)}
    </div>
  );
}

/**
 * One organization for a platform admin, without switching the console to it: who it is, what it
 * holds (members, applications, live sessions, this month's usage events) and its subscription,
 * with Open (switch to it) and the way to its subscription.
 */
function OrganizationDetail({ id }: { id: string }) {
  const trpc = useTRPC();
  const open = useOpenOrganization();
  const tenant = useQuery(trpc.tenants.get.queryOptions({ id }));
  const overview = useQuery(trpc.tenants.overview.queryOptions({ id }));
  const slug = tenant.data?.slug;
  const subscription = useQuery(trpc.subscriptions.get.queryOptions({ organization_slug: slug }, { enabled: slug !== undefined }));
  const data = tenant.data;
  const counts = overview.data?.counts;
  return (
    <>
      <p className="breadcrumb">
        <Link to="/organizations" data-testid="organization-detail-back">
          ← Organizations
        </Link>
      </p>
      {tenant.isPending && <Skeleton label="Loading the organization…" testId="organization-detail-loading" />}
      {tenant.isError && <ErrorPanel error={tenant.error} title="Could not load the organization" onRetry={() => void tenant.refetch()} />}
      {data && (
        <section className="panel" data-testid="organization-detail" data-organization-id={data.id}>
          <div className="panel__header">
            <h2 className="panel__title">{data.name}</h2>
            <div className="panel__actions">
              <Link className="button" to={subscriptionPath(data.slug)} data-testid="organization-detail-subscription">
                Manage subscription
              </Link>
              <button
                type="button"
                className="button button--primary"
                onClick={() => void open(data.slug)}
                data-testid="organization-detail-open"
              >
                Open {data.name}
              </button>
            </div>
          </div>
          <dl className="facts">
            <dt>Slug</dt>
            <dd>
              <Identifier value={data.slug} label="organization slug" testId="organization-detail-slug" />
            </dd>
            <dt>ID</dt>
            <dd>
              <Identifier value={data.id} label="organization id" testId="organization-detail-id" />
            </dd>
            <dt>Kind</dt>
            <dd data-testid="organization-detail-kind">{data.kind}</dd>
            <dt>Members</dt>
            <dd data-testid="organization-detail-members">{counts ? counts.members : '…'}</dd>
            <dt>Applications</dt>
            <dd data-testid="organization-detail-applications">{counts ? counts.applications : '…'}</dd>
            <dt>Active sessions</dt>
            <dd data-testid="organization-detail-sessions">{counts ? counts.activeSessions : '…'}</dd>
            <dt>Usage events this month</dt>
            <dd data-testid="organization-detail-usage">{overview.data ? overview.data.usage.events.toLocaleString('en-US') : '…'}</dd>
            <dt>Subscription</dt>
            <dd data-testid="organization-detail-plan">
              {subscription.data ? (
                <>
                  {subscription.data.plan.name} <span className="muted">{subscription.data.status}</span>
                </>
              ) : (
                <span className="muted">{subscription.isError ? 'none' : '…'}</span>
              )}
            </dd>
            <dt>Created</dt>
            <dd>
              <When at={data.createdAt} empty="—" />
            </dd>
          </dl>
        </section>
      )}
    </>
  );
}

/** What a non-admin sees here: the same panel as a 403 from the api, which is what tenants.list would mean. */
function Refusal() {
  return (
    <section className="error-panel" role="alert" data-testid="error-panel">
      <h2 className="error-panel__title">Platform admins only</h2>
      <p className="error-panel__message" data-testid="error-message">
        Only platform admins can list every organization. Your organizations are in the workspace switcher in the header.
      </p>
      <dl className="error-panel__facts">
        <dt>Code</dt>
        <dd>
          <code data-testid="error-code">forbidden</code>
        </dd>
      </dl>
    </section>
  );
}

function OrganizationsList() {
  const trpc = useTRPC();
  const pager = usePager();
  const [search, setSearch] = useState('');
  const [q, setQ] = useState('');
  const open = useOpenOrganization();
  const navigate = useNavigate();
  // One definition for the list's lifetime: both handlers are stable (navigate keeps its identity).
  const [columns] = useState(() => organizationColumns(open, (path) => void navigate(path)));
  useEffect(() => {
    const timer = setTimeout(() => setQ(search.trim()), SEARCH_DELAY_MS);
    return () => clearTimeout(timer);
  }, [search]);
  const changeSearch = (value: string) => {
    setSearch(value);
    pager.reset();
  };
  const tenants = useQuery({
    ...trpc.tenants.list.queryOptions({ q: q || undefined, limit: PAGE_SIZE, cursor: pager.cursor }),
    placeholderData: keepPreviousData,
  });

  return (
    <ListPage
      testId="organizations"
      noun="organizations"
      title="All organizations"
      tools={
        <div className="form-field">
          <label className="sr-only" htmlFor="organizations-search">
            Search organizations
          </label>
          <input
            id="organizations-search"
            type="search"
            placeholder="Search by name or slug"
            value={search}
            onChange={(event) => changeSearch(event.target.value)}
            data-testid="organizations-search"
          />
        </div>
      }
      query={tenants}
      pager={pager}
      filtered={q ? { title: `No organization matches “${q}”.`, clear: () => changeSearch('') } : undefined}
      empty={{ title: 'No organizations yet.', next: 'Organizations appear here when someone creates one.' }}
      rowKey={(tenant) => tenant.id}
      table={{
        columns,
        rowAttributes: (tenant) => ({ 'data-testid': 'organization-row', 'data-slug': tenant.slug, 'data-organization-id': tenant.id }),
        minWidth: '55rem',
      }}
    />
  );
}

import type { TTenantListItem } from '@svc/contracts/tenants';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { useNavigate } from 'react-router';
import { actionsColumn, columnHelper, whenColumn } from '../../components/data-table.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { useActiveOrganization, useOpenOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;
/** Typing pauses this long before the list is asked again. */
const SEARCH_DELAY_MS = 250;

/** The Subscription page with this organization chosen (its `?organization=` picks it). */
export function subscriptionPath(slug: string): string {
  return `/subscription?${new URLSearchParams({ organization: slug })}`;
}

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
        <span data-testid="organization-name" title={info.getValue()}>
          {info.getValue()}
        </span>
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
      meta: { width: '8rem' },
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

/** Platform admins: every organization, searched by name or slug, each one a click from its Overview. */
export function OrganizationsPage() {
  const active = useActiveOrganization();
  return (
    <div data-testid="page-organizations">
      <PageHeader title="Organizations" description="Every organization on this svc deployment. Platform admins only." />
      {active.error && <ErrorPanel error={active.error} title="Could not load your account" />}
      {active.isLoading && <Skeleton label="Loading organizations…" testId="organizations-loading" />}
      {active.me && !active.me.isPlatformAdmin && <Refusal />}
      {active.me?.isPlatformAdmin && <OrganizationsList />}
    </div>
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

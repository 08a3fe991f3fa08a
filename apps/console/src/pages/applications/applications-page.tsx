import type { TApplication, TApplicationWithSecret } from '@svc/contracts/applications';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, Navigate, useNavigate, useParams, useSearchParams } from 'react-router';
import { actionsColumn, columnHelper, whenColumn } from '../../components/data-table.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { SecretOnceDialog } from '../../components/secret-once.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';
import { ApplicationActions } from './application-actions.tsx';
import { ApplicationDetail, StatusPill } from './application-detail.tsx';
import { ApplicationSettingsDialog } from './application-settings-dialog.tsx';
import { agentContextUrl } from './connect-panel.tsx';
import { CreateApplicationDialog } from './create-application-form.tsx';
import { MachineSettingsDialog } from './machine-settings-dialog.tsx';

const PAGE_SIZE = 50;

/** An application's own page in the console: shareable, and kept by reload and the back button. */
export const applicationPath = (id: string) => `/applications/${encodeURIComponent(id)}`;

/** Keys the api has just returned: in their dialog until dismissed, never fetched again. */
type Revealed = {
  title: string;
  applicationId: string;
  publishableKey: string;
  secretKey: string;
  /** Signs people in (not a machine client): the dialog points to its agent context. */
  signsPeopleIn: boolean;
};

/** What the row menus ask the page to do. */
type RowHandlers = {
  onManage: (application: TApplication) => void;
  onEdit: (application: TApplication) => void;
  onRotated: (rotated: TApplicationWithSecret) => Promise<void>;
};

/**
 * The list's columns: the name (over its slug), status, the publishable key and the secret key's
 * prefix as Identifiers, how many redirect URLs, when it was created, and the row's menu.
 */
function applicationColumns(organizationSlug: () => string, handlers: RowHandlers) {
  const column = columnHelper<TApplication>();
  return column.columns([
    column.accessor('name', {
      header: 'Name',
      sortFn: 'text',
      cell: (info) => {
        const app = info.row.original;
        return (
          <div className="stack">
            {/* The name opens the application's own page, /applications/<id>. */}
            <Link to={applicationPath(app.id)} data-testid="application-row-name" title={app.name}>
              {app.name}
            </Link>
            <Identifier value={app.slug} label="application slug" copy={false} testId="application-row-slug" />
          </div>
        );
      },
    }),
    column.accessor('status', {
      header: 'Status',
      sortFn: 'text',
      meta: { width: '7rem' },
      cell: (info) => <StatusPill status={info.getValue()} testId="application-row-status" />,
    }),
    column.accessor('publishableKey', {
      header: 'Publishable key',
      enableSorting: false,
      meta: { width: '12rem' },
      cell: (info) => <Identifier value={info.getValue()} label="publishable key" tail={8} testId="application-row-publishable-key" />,
    }),
    column.accessor('secretKeyPrefix', {
      header: 'Secret key',
      enableSorting: false,
      meta: { width: '9.5rem', description: 'The first characters of the secret key: the whole key is shown once' },
      cell: (info) => (
        <Identifier value={`${info.getValue()}…`} label="secret key prefix" copy={false} testId="application-row-secret-prefix" />
      ),
    }),
    column.accessor((app) => app.redirectUrls.length, {
      id: 'redirectUrls',
      header: 'Redirect URLs',
      enableSorting: false,
      meta: { width: '9rem', align: 'end' },
      cell: (info) => <span data-testid="application-row-redirect-urls">{info.getValue()}</span>,
    }),
    whenColumn(column, 'createdAt', 'Created'),
    actionsColumn(column, (application) => (
      <ApplicationActions application={application} organizationSlug={organizationSlug()} testId="application-actions" {...handlers} />
    )),
  ]);
}

/**
 * Applications of the active organization: list with status, create (secret key once), edit,
 * rotate, disable; one application's page at /applications/<id> (one route, `applications/:id?`,
 * so the secret key a create reveals stays on screen as the page moves to the new application).
 */
export function ApplicationsPage() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const active = useActiveOrganization();
  const pager = usePager();
  const navigate = useNavigate();
  const [search] = useSearchParams();
  const selected = useParams().id ?? null;
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<TApplication | null>(null);
  const [revealed, setRevealed] = useState<Revealed | null>(null);
  const organizationSlug = active.organization?.slug;
  const issuer = useQuery(trpc.service.config.queryOptions()).data?.publicUrl.replace(/\/+$/, '');
  const select = (id: string | null) => {
    void navigate(id ? applicationPath(id) : '/applications');
  };
  // The address of earlier releases (`?application=<id>`), still in bookmarks and old links.
  const legacy = search.get('application');
  const list = useQuery({
    ...trpc.applications.list.queryOptions(
      { organization_slug: organizationSlug ?? '', limit: PAGE_SIZE, cursor: pager.cursor },
      { enabled: organizationSlug !== undefined },
    ),
    placeholderData: keepPreviousData,
  });
  const reveal = async (title: string, created: TApplicationWithSecret) => {
    setRevealed({
      title,
      applicationId: created.application.id,
      publishableKey: created.application.publishableKey,
      secretKey: created.secretKey,
      signsPeopleIn: created.application.clientType !== 'machine',
    });
    await queryClient.invalidateQueries({ queryKey: trpc.applications.pathKey() });
  };
  const onRotated = (rotated: TApplicationWithSecret) => reveal(`New secret key for ${rotated.application.name}`, rotated);
  // One definition for the page's lifetime: the handlers only read state setters, a ref and the query client.
  const [slugRef] = useState(() => ({ current: '' }));
  slugRef.current = organizationSlug ?? '';
  const [selectRef] = useState(() => ({ current: select }));
  selectRef.current = select;
  const [columns] = useState(() =>
    applicationColumns(() => slugRef.current, {
      onManage: (app) => selectRef.current(app.id),
      onEdit: setEditing,
      onRotated,
    }),
  );

  if (legacy && !selected) {
    return <Navigate to={applicationPath(legacy)} replace />;
  }

  return (
    <div data-testid="page-applications" data-application-id={selected ?? undefined}>
      <PageHeader
        title="Applications"
        description={`Projects that sign users in through svc${active.organization ? ` for ${active.organization.name}` : ''}.`}
        actions={
          organizationSlug !== undefined && (
            <CreateApplicationDialog
              organizationSlug={organizationSlug}
              open={creating}
              onOpenChange={setCreating}
              onCreated={async (created) => {
                pager.reset();
                select(created.application.id);
                await reveal(`${created.application.name} created`, created);
              }}
            />
          )
        }
      />
      <SecretOnceDialog
        revealed={revealed && { title: revealed.title, value: revealed.secretKey }}
        onDismiss={() => setRevealed(null)}
        description="Store the secret key where your backend reads it now: this is the only time svc shows it. The publishable key is public and stays on the application."
        label="Secret key"
        bodyAttributes={revealed ? { 'data-application-id': revealed.applicationId } : undefined}
        testId="application-revealed"
        secretTestId="application-secret"
      >
        {revealed && (
          <>
            <dl className="facts">
              <dt>Client ID</dt>
              <dd>
                <Identifier value={revealed.applicationId} label="client id" testId="application-revealed-client-id" />
              </dd>
              <dt>Issuer</dt>
              <dd>
                {issuer ? (
                  <Identifier value={issuer} label="issuer URL" tail={16} testId="application-revealed-issuer" />
                ) : (
                  <Skeleton label="Loading the issuer…" lines={1} />
                )}
              </dd>
              <dt>Publishable key</dt>
              <dd>
                <Identifier
                  value={revealed.publishableKey}
                  label="publishable key"
                  tail={8}
                  testId="application-revealed-publishable-key"
                />
              </dd>
            </dl>
            {revealed.signsPeopleIn && issuer && (
              <p data-testid="application-revealed-connect">
                Next, connect your app:{' '}
                <a href={agentContextUrl(issuer, revealed.publishableKey, 'express')} target="_blank" rel="noreferrer">
                  its agent context
                </a>{' '}
                (Express here; the application's <strong>Connect your app</strong> panel has every framework) is a prompt to follow in an
                empty folder.
              </p>
            )}
          </>
        )}
      </SecretOnceDialog>
      {editing &&
        organizationSlug !== undefined &&
        (editing.clientType === 'machine' ? (
          <MachineSettingsDialog
            key={editing.id}
            application={editing}
            organizationSlug={organizationSlug}
            onClose={() => setEditing(null)}
          />
        ) : (
          <ApplicationSettingsDialog
            key={editing.id}
            application={editing}
            organizationSlug={organizationSlug}
            onClose={() => setEditing(null)}
          />
        ))}
      {selected ? (
        <>
          <p className="breadcrumb">
            <Link to="/applications" data-testid="application-detail-back">
              ← Applications
            </Link>
          </p>
          {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
          {active.isLoading && <Skeleton label="Loading the application…" testId="application-detail-loading" />}
          {organizationSlug !== undefined && (
            <ApplicationDetail
              key={selected}
              id={selected}
              organizationSlug={organizationSlug}
              onClose={() => select(null)}
              onEdit={setEditing}
              onRotated={onRotated}
            />
          )}
        </>
      ) : (
        <ListPage
          testId="applications"
          noun="applications"
          title="Applications"
          workspace={active}
          query={list}
          pager={pager}
          empty={{
            title: 'No applications yet.',
            next: (
              <>
                Create one to get its keys, or try keyless development first (<code>/v1/client/config?keyless=1</code>).
              </>
            ),
            action: { label: 'Create application', onClick: () => setCreating(true) },
          }}
          rowKey={(app) => app.id}
          table={{
            columns,
            rowAttributes: (app) => ({
              'data-testid': 'application-row',
              'data-application-id': app.id,
              'data-status': app.status,
            }),
            minWidth: '60rem',
          }}
        />
      )}
    </div>
  );
}

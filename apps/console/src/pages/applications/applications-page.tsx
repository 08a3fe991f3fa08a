import type { TApplicationWithSecret } from '@svc/contracts/applications';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useSearchParams } from 'react-router';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { Pager, usePager } from '../../components/pager.tsx';
import { SecretOnce } from '../../components/secret-once.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';
import { ApplicationDetail, StatusPill } from './application-detail.tsx';
import { CreateApplicationForm } from './create-application-form.tsx';

const PAGE_SIZE = 50;

/** Keys the api has just returned: on screen until dismissed or the page is left, never fetched again. */
type Revealed = { title: string; applicationId: string; publishableKey: string; secretKey: string };

/**
 * Applications of the active organization: list with status, create (secret key once), and the
 * selected application (`?application=<id>`, so it survives a reload and can be linked).
 */
export function ApplicationsPage() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const active = useActiveOrganization();
  const pager = usePager();
  const [search, setSearch] = useSearchParams();
  const [revealed, setRevealed] = useState<Revealed | null>(null);
  const organizationSlug = active.organization?.slug;
  const selected = search.get('application');
  const select = (id: string | null) => setSearch(id ? { application: id } : {});
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
    });
    await queryClient.invalidateQueries({ queryKey: trpc.applications.pathKey() });
  };

  return (
    <div data-testid="page-applications">
      <PageHeader
        title="Applications"
        description={`Projects that sign users in through svc${active.organization ? ` for ${active.organization.name}` : ''}.`}
      />
      {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
      {active.me && !active.organization && (
        <p className="muted" data-testid="applications-no-workspace">
          You are not in a workspace: there are no applications to manage.
        </p>
      )}
      {organizationSlug !== undefined && (
        <div style={{ display: 'grid', gap: 16 }}>
          {revealed && (
            <section className="panel" data-testid="application-revealed" data-application-id={revealed.applicationId}>
              <h2 className="panel__title">{revealed.title}</h2>
              <dl className="facts">
                <dt>Publishable key</dt>
                <dd>
                  <code data-testid="application-revealed-publishable-key">{revealed.publishableKey}</code>
                </dd>
              </dl>
              <SecretOnce label="Secret key" value={revealed.secretKey} testId="application-secret" />
              <button type="button" className="button" onClick={() => setRevealed(null)} data-testid="application-secret-dismiss">
                I have stored it
              </button>
            </section>
          )}
          <CreateApplicationForm
            organizationSlug={organizationSlug}
            onCreated={async (created) => {
              pager.reset();
              select(created.application.id);
              await reveal(`${created.application.name} created`, created);
            }}
          />
          {selected && (
            <ApplicationDetail
              key={selected}
              id={selected}
              organizationSlug={organizationSlug}
              onClose={() => select(null)}
              onRotated={(rotated) => reveal(`New secret key for ${rotated.application.name}`, rotated)}
            />
          )}
          <section className="panel" data-testid="applications-list">
            <h2 className="panel__title">Applications</h2>
            {list.isError && <ErrorPanel error={list.error} title="Could not load the applications" onRetry={() => void list.refetch()} />}
            {list.isPending && !list.isError && (
              <p className="loading" data-testid="applications-loading">
                Loading applications…
              </p>
            )}
            {list.data &&
              (list.data.data.length === 0 ? (
                <p className="muted" data-testid="applications-empty">
                  No applications yet. Create one above, or try keyless development first (<code>/v1/client/config?keyless=1</code>).
                </p>
              ) : (
                <table className="data-table" data-testid="applications-table" aria-busy={list.isPlaceholderData}>
                  <thead>
                    <tr>
                      <th>Name</th>
                      <th>Status</th>
                      <th>Publishable key</th>
                      <th>Secret key</th>
                      <th>Redirect URLs</th>
                      <th>Created</th>
                      <th />
                    </tr>
                  </thead>
                  <tbody>
                    {list.data.data.map((app) => (
                      <tr
                        key={app.id}
                        data-testid="application-row"
                        data-application-id={app.id}
                        data-status={app.status}
                        aria-selected={app.id === selected}
                      >
                        <td>
                          <div data-testid="application-row-name">{app.name}</div>
                          <code className="muted">{app.slug}</code>
                        </td>
                        <td>
                          <StatusPill status={app.status} testId="application-row-status" />
                        </td>
                        <td>
                          <code data-testid="application-row-publishable-key">{app.publishableKey}</code>
                        </td>
                        <td>
                          <code>{app.secretKeyPrefix}…</code>
                        </td>
                        <td>{app.redirectUrls.length}</td>
                        <td>
                          <time dateTime={app.createdAt} title={app.createdAt}>
                            {new Date(app.createdAt).toLocaleString()}
                          </time>
                        </td>
                        <td>
                          <button type="button" className="button" onClick={() => select(app.id)} data-testid="application-manage">
                            Manage
                          </button>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              ))}
            {list.data && (
              <Pager pager={pager} nextCursor={list.isPlaceholderData ? null : list.data.nextCursor} testId="applications-pager" />
            )}
          </section>
        </div>
      )}
    </div>
  );
}

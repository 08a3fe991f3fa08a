import type { TApplicationWithSecret } from '@svc/contracts/applications';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useSearchParams } from 'react-router';
import { focusField } from '../../components/empty-state.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { SecretOnce } from '../../components/secret-once.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';
import { ApplicationDetail, StatusPill } from './application-detail.tsx';
import { CreateApplicationForm, NAME_FIELD_ID } from './create-application-form.tsx';

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
              Create one above, or try keyless development first (<code>/v1/client/config?keyless=1</code>).
            </>
          ),
          action: { label: 'Create an application', onClick: focusField(NAME_FIELD_ID) },
        }}
        above={(organization) => (
          <>
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
              organizationSlug={organization.slug}
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
                organizationSlug={organization.slug}
                onClose={() => select(null)}
                onRotated={(rotated) => reveal(`New secret key for ${rotated.application.name}`, rotated)}
              />
            )}
          </>
        )}
        columns={['Name', 'Status', 'Publishable key', 'Secret key', 'Redirect URLs', 'Created', '']}
        rowKey={(app) => app.id}
        row={(app) => (
          <tr data-testid="application-row" data-application-id={app.id} data-status={app.status} aria-selected={app.id === selected}>
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
        )}
      />
    </div>
  );
}

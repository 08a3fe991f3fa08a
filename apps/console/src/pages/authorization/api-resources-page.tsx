import type { TApiResource } from '@svc/contracts/authorization';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import { columnHelper, whenColumn } from '../../components/data-table.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';
import { CreateApiResourceDialog } from './api-resource-dialogs.tsx';

const PAGE_SIZE = 50;

/** Where one API resource is shown and managed. */
export const resourcePath = (id: string) => `/authorization/resources/${id}`;

/**
 * The list's columns: the name (a link to the resource, over its description) takes what the
 * sized ones leave; the identifier, the tokens' audience, is an Identifier; how many permissions
 * it declares; when it was registered. Everything else happens on the resource's own page.
 */
function resourceColumns() {
  const column = columnHelper<TApiResource>();
  return column.columns([
    column.accessor('name', {
      header: 'API',
      sortFn: 'text',
      cell: (info) => {
        const resource = info.row.original;
        return (
          <div className="stack">
            <span title={resource.name}>
              <Link to={resourcePath(resource.id)} data-testid="api-resource-link">
                {resource.name}
              </Link>
            </span>
            {resource.description && (
              <span className="muted" title={resource.description} data-testid="api-resource-description">
                {resource.description}
              </span>
            )}
          </div>
        );
      },
    }),
    column.accessor('identifier', {
      header: 'Identifier',
      sortFn: 'text',
      meta: { width: '26rem', description: 'The resource parameter of token requests, and the audience (aud) of its access tokens' },
      cell: (info) => <Identifier value={info.getValue()} label="API identifier" tail={16} testId="api-resource-identifier" />,
    }),
    column.accessor((resource) => resource.permissions.length, {
      id: 'permissions',
      header: 'Permissions',
      meta: { width: '10rem', align: 'end' },
      cell: (info) => (
        <span data-testid="api-resource-permission-count" title={info.row.original.permissions.map((p) => p.name).join(', ')}>
          {info.getValue()}
        </span>
      ),
    }),
    whenColumn(column, 'createdAt', 'Created'),
  ]);
}

const COLUMNS = resourceColumns();

/**
 * The product's API resources (docs/authorization.md): each API of the product, named by the
 * identifier its tokens carry as their audience, with the permissions roles grant on it. Platform
 * admins register them; whoever holds roles.read in the organization reads them, as custom roles
 * are made of their permissions.
 */
export function ApiResourcesPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const pager = usePager();
  const slug = active.organization?.slug;
  const isPlatformAdmin = active.me?.isPlatformAdmin === true;
  const [creating, setCreating] = useState(false);
  const resources = useQuery({
    ...trpc.authorization.resource.list.queryOptions(
      { organization_slug: slug, limit: PAGE_SIZE, cursor: pager.cursor },
      { enabled: slug !== undefined },
    ),
    placeholderData: keepPreviousData,
  });

  return (
    <div data-testid="page-api-resources">
      <PageHeader
        title="API resources"
        description="Your product's APIs and the permissions they check. Roles grant the permissions; a token asked for one API (its identifier as the resource) carries the person's permissions on it."
        actions={isPlatformAdmin && <CreateApiResourceDialog open={creating} onOpenChange={setCreating} />}
      />
      {active.me && !isPlatformAdmin && (
        <p className="muted" data-testid="api-resources-read-only">
          Only platform admins register APIs and change their permissions. Your organization’s custom roles on the{' '}
          <Link to="/roles">Roles</Link> page can grant these permissions.
        </p>
      )}
      <ListPage
        testId="api-resources"
        noun="API resources"
        workspace={active}
        query={resources}
        pager={pager}
        empty={
          isPlatformAdmin
            ? {
                title: 'No API resources yet.',
                next: 'Register your product’s first API: its identifier, a name, and the permissions it checks.',
                action: { label: 'Register API', onClick: () => setCreating(true) },
              }
            : { title: 'No API resources yet.', next: 'A platform admin registers the product’s APIs and their permissions.' }
        }
        rowKey={(resource) => resource.id}
        table={{
          columns: COLUMNS,
          rowAttributes: (resource) => ({
            'data-testid': 'api-resource-row',
            'data-resource-id': resource.id,
            'data-resource-identifier': resource.identifier,
          }),
          minWidth: '52rem',
        }}
      />
    </div>
  );
}

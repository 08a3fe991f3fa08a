import type { TRegisteredClient } from '@svc/contracts/registered-clients';
import { useQuery } from '@tanstack/react-query';
import { columnHelper, DataTable, whenColumn } from '../../components/data-table.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { useTRPC } from '../../trpc.ts';

const column = columnHelper<TRegisteredClient>();

/** One registered client a row: its id, the name it gave itself, where its codes go, its auth, its dates. */
const COLUMNS = column.columns([
  column.accessor('id', {
    header: 'Client id',
    enableSorting: false,
    meta: { width: '14rem' },
    cell: (info) => <Identifier value={info.getValue()} label="client id" testId="registered-client-id" />,
  }),
  column.accessor((row) => row.name ?? '', {
    id: 'name',
    header: 'Name it gave',
    sortFn: 'text',
    meta: { description: 'What the client says it is: nobody checked it' },
  }),
  column.accessor((row) => row.redirectUris.join(' '), {
    id: 'redirectUris',
    header: 'Redirect URIs',
    enableSorting: false,
    cell: (info) => <code title={info.getValue()}>{info.getValue()}</code>,
  }),
  column.accessor((row) => (row.tokenEndpointAuthMethod === 'none' ? 'public' : 'confidential'), {
    id: 'kind',
    header: 'Client',
    sortFn: 'text',
    meta: { width: '8rem' },
  }),
  whenColumn(column, 'registeredAt', 'Registered'),
  whenColumn(column, 'lastUsedAt', 'Last token', { empty: 'never' }),
  whenColumn(column, 'deletedAfter', 'Deleted after', { width: '11rem' }),
]);

/**
 * Platform -> Registered clients: the clients that registered themselves by dynamic client
 * registration (docs/oidc.md "Dynamic client registration"). Read-only: an unused one is deleted
 * by the worker; the organizations they act for revoke them on Third-party access.
 */
export function RegisteredClientsPage() {
  const trpc = useTRPC();
  const list = useQuery(trpc.registeredClients.list.queryOptions(undefined, { staleTime: 0 }));
  return (
    <div data-testid="page-registered-clients">
      <PageHeader
        title="Registered clients"
        description="Clients of svc's OpenID Provider that registered themselves (dynamic client registration, RFC 7591): third-party, each person consents, each organization's third-party access applies. Platform admins only."
      />
      {list.isError && (
        <ErrorPanel
          error={list.error}
          title="Could not load the registered clients"
          onRetry={() => void list.refetch()}
          forbidden={{ title: 'Platform admins only', help: 'Only platform admins see the clients that registered themselves.' }}
        />
      )}
      {list.isPending && !list.isError && <Skeleton label="Loading the registered clients…" testId="registered-clients-loading" heading />}
      {list.data && (
        <>
          <p className="muted" data-testid="registered-clients-setting">
            {list.data.registrationEnabled
              ? `Registration is on (OIDC_DYNAMIC_REGISTRATION=on). A client no token was issued to for ${list.data.unusedDays} days is deleted.`
              : `Registration is off (OIDC_DYNAMIC_REGISTRATION): no client can register now. Those registered before are deleted after ${list.data.unusedDays} days without a token.`}
          </p>
          <DataTable
            columns={COLUMNS}
            data={list.data.data}
            rowId={(c) => c.id}
            rowAttributes={(c) => ({ 'data-testid': 'registered-client-row', 'data-client-id': c.id })}
            label="Registered clients"
            minWidth="60rem"
            testId="registered-clients-table"
          />
        </>
      )}
    </div>
  );
}

import type { TBillingAdapterStatus, TBillingProviderRecord } from '@svc/contracts/billing';
import { useState } from 'react';
import { actionsColumn, columnHelper, DataTable, whenColumn } from '../../components/data-table.tsx';
import { EmptyState } from '../../components/empty-state.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { ConnectDialog } from './connect-dialog.tsx';
import { PROVIDER_LABEL, PROVIDER_SETTING } from './providers.ts';

const adapterColumn = columnHelper<TBillingAdapterStatus>();

/** What this svc's environment configures per provider: never a key, only whether there is one and its mode. */
const ADAPTER_COLUMNS = adapterColumn.columns([
  adapterColumn.accessor((a) => PROVIDER_LABEL[a.provider], { id: 'provider', header: 'Provider', sortFn: 'text' }),
  adapterColumn.accessor('configured', {
    header: 'Status',
    enableSorting: false,
    meta: { width: '12rem' },
    cell: (info) =>
      info.getValue() ? (
        <span className="pill pill--on">configured</span>
      ) : (
        <span className="pill pill--off" title={`set ${PROVIDER_SETTING[info.row.original.provider]}`}>
          not configured
        </span>
      ),
  }),
  adapterColumn.accessor('mode', {
    header: 'Mode',
    enableSorting: false,
    meta: { width: '10rem', description: "Sandbox or live, from the key's form" },
    cell: (info) => info.getValue() ?? <span className="muted">{info.row.original.configured ? 'unknown key form' : '—'}</span>,
  }),
]);

/** The providers this svc has keys for (read from its environment), in a panel of their own. */
export function Adapters({ adapters }: { adapters: TBillingAdapterStatus[] }) {
  return (
    <section className="panel" data-testid="billing-adapters">
      <h2 className="panel__title">Providers on this svc</h2>
      <p className="muted">Read from the server's environment: configured or not, and sandbox or live from the key's form.</p>
      <DataTable
        columns={ADAPTER_COLUMNS}
        data={adapters}
        rowId={(a) => a.provider}
        rowAttributes={(a) => ({
          'data-testid': `billing-adapter-${a.provider}`,
          'data-configured': String(a.configured),
          'data-mode': a.mode ?? '',
        })}
        label="Providers on this svc"
        minWidth="30rem"
        testId="billing-adapters-table"
      />
    </section>
  );
}

function connectionColumns(onChange: (record: TBillingProviderRecord) => void) {
  const column = columnHelper<TBillingProviderRecord>();
  return column.columns([
    column.accessor((r) => PROVIDER_LABEL[r.provider], { id: 'provider', header: 'Provider', sortFn: 'text', meta: { width: '8rem' } }),
    column.accessor('externalAccountId', {
      header: 'Account',
      enableSorting: false,
      meta: { description: 'The customer or subscription at the provider that usage is recorded against' },
      cell: (info) => {
        const account = info.getValue();
        return account ? (
          <Identifier value={account} label="account id" testId="billing-connection-account" />
        ) : (
          <span className="muted">not set</span>
        );
      },
    }),
    column.accessor('mode', {
      header: 'Mode',
      sortFn: 'text',
      meta: { width: '7rem' },
      cell: (info) => <span data-testid="billing-connection-mode">{info.getValue()}</span>,
    }),
    column.accessor('status', {
      header: 'Status',
      sortFn: 'text',
      meta: { width: '9.5rem' },
      cell: (info) => (
        <span className={`pill ${info.getValue() === 'connected' ? 'pill--on' : ''}`} data-testid="billing-connection-status">
          {info.getValue()}
        </span>
      ),
    }),
    whenColumn(column, 'updatedAt', 'Changed'),
    actionsColumn(column, (record) => (
      <RowActions
        name={`the ${PROVIDER_LABEL[record.provider]} connection`}
        testId="billing-connection-actions"
        actions={[{ label: 'Change…', testId: 'billing-connection-change', onSelect: () => onChange(record) }]}
      />
    )),
  ]);
}

/**
 * The organization's connections (at most one per provider, so never paged): a table with
 * "Change…" per row, and "Connect provider" opening the connect dialog.
 */
export function Connections({
  organizationSlug,
  records,
  adapters,
}: {
  organizationSlug: string;
  records: TBillingProviderRecord[];
  adapters: TBillingAdapterStatus[];
}) {
  const [connecting, setConnecting] = useState(false);
  const [changing, setChanging] = useState<TBillingProviderRecord | null>(null);
  const [columns] = useState(() => connectionColumns(setChanging));
  return (
    <section className="panel" data-testid="billing-connections">
      <div className="list-page__head">
        <h2 className="panel__title">Connections</h2>
        <ConnectDialog
          organizationSlug={organizationSlug}
          adapters={adapters}
          open={connecting}
          onOpenChange={setConnecting}
          trigger={
            <button type="button" className="button button--primary" data-testid="billing-connect-open">
              Connect provider
            </button>
          }
        />
      </div>
      {records.length === 0 ? (
        <EmptyState
          title="No provider connected yet."
          next="Connect the provider that bills this organization, with the customer or subscription usage is recorded against."
          action={{ label: 'Connect provider', onClick: () => setConnecting(true) }}
          testId="billing-connections-empty"
        />
      ) : (
        <DataTable
          columns={columns}
          data={records}
          rowId={(r) => r.id}
          rowAttributes={(r) => ({ 'data-testid': 'billing-connection', 'data-provider': r.provider, 'data-status': r.status })}
          label="Connections"
          minWidth="44rem"
          testId="billing-connections-table"
        />
      )}
      {changing && (
        <ConnectDialog
          key={changing.id}
          organizationSlug={organizationSlug}
          adapters={adapters}
          record={changing}
          open
          onOpenChange={(open) => {
            if (!open) {
              setChanging(null);
            }
          }}
        />
      )}
    </section>
  );
}

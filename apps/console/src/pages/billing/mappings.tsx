import type { TBillingAdapterStatus, TBillingMapping } from '@svc/contracts/billing';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { actionsColumn, columnHelper, whenColumn } from '../../components/data-table.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { usePager } from '../../components/pager.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { useTRPC } from '../../trpc.ts';
import { MappingDialog } from './mapping-dialog.tsx';
import { PROVIDER_LABEL } from './providers.ts';

const PAGE_SIZE = 50;

function mappingColumns(onRepoint: (mapping: TBillingMapping) => void) {
  const column = columnHelper<TBillingMapping>();
  return column.columns([
    column.accessor('eventType', {
      header: 'Event type',
      sortFn: 'text',
      cell: (info) => <code title={info.getValue()}>{info.getValue()}</code>,
    }),
    column.accessor((m) => PROVIDER_LABEL[m.provider], { id: 'provider', header: 'Provider', sortFn: 'text', meta: { width: '8rem' } }),
    column.accessor('providerItemId', {
      header: 'Provider item',
      enableSorting: false,
      meta: { width: '14rem', description: "A Stripe meter's event name, a Razorpay item id or a Paddle price id" },
      cell: (info) => <Identifier value={info.getValue()} label="provider item id" testId="billing-mapping-item" />,
    }),
    whenColumn(column, 'updatedAt', 'Changed'),
    actionsColumn(column, (mapping) => (
      <RowActions
        name={`the ${mapping.eventType} mapping to ${PROVIDER_LABEL[mapping.provider]}`}
        testId="billing-mapping-actions"
        actions={[{ label: 'Re-point…', testId: 'billing-mapping-repoint', onSelect: () => onRepoint(mapping) }]}
      />
    )),
  ]);
}

type MappingsProps = {
  organizationSlug: string;
  adapters: TBillingAdapterStatus[];
  /** The add dialog's state: the page owns it, since the empty sync log list opens it too. */
  adding: boolean;
  onAddingChange: (open: boolean) => void;
};

/** Event type → provider item, paged: "Add mapping" opens the dialog, "Re-point…" changes a row's item. */
export function Mappings({ organizationSlug, adapters, adding, onAddingChange }: MappingsProps) {
  const trpc = useTRPC();
  const pager = usePager();
  const [repointing, setRepointing] = useState<TBillingMapping | null>(null);
  const [columns] = useState(() => mappingColumns(setRepointing));
  const mappings = useQuery({
    ...trpc.billing.mapping.list.queryOptions({ organization_slug: organizationSlug, limit: PAGE_SIZE, cursor: pager.cursor }),
    placeholderData: keepPreviousData,
  });

  return (
    <>
      <ListPage
        testId="billing-mappings"
        noun="mappings"
        title="Mappings"
        tools={
          <MappingDialog
            organizationSlug={organizationSlug}
            adapters={adapters}
            open={adding}
            onOpenChange={onAddingChange}
            trigger={
              <button type="button" className="button button--primary" data-testid="billing-mapping-open">
                Add mapping
              </button>
            }
          />
        }
        query={mappings}
        pager={pager}
        empty={{
          title: 'No mappings yet.',
          next: 'Map a usage event type to a provider item: each usage event of that type is then synced to it.',
          action: { label: 'Add mapping', onClick: () => onAddingChange(true) },
        }}
        rowKey={(m) => m.id}
        table={{
          columns,
          rowAttributes: (m) => ({ 'data-testid': 'billing-mapping', 'data-provider': m.provider, 'data-event-type': m.eventType }),
          minWidth: '44rem',
        }}
      />
      {repointing && (
        <MappingDialog
          key={repointing.id}
          organizationSlug={organizationSlug}
          adapters={adapters}
          mapping={repointing}
          open
          onOpenChange={(open) => {
            if (!open) {
              setRepointing(null);
            }
          }}
        />
      )}
    </>
  );
}

import type { TExport } from '@svc/contracts/exports';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { toast } from 'sonner';
import { columnHelper, whenColumn } from '../../components/data-table.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';
import { CreateExportDialog } from './create-export-dialog.tsx';

const PAGE_SIZE = 20;
/** While an export is pending or running, the list is read again this often. */
const POLL_MS = 1_000;

/**
 * A section key of the export (`usageEvents`, `apiKeys`; the server's EXPORT_SECTIONS are the one
 * list, and `counts` holds every one of them) in words: "3 usage events", "1 API key".
 */
function sectionCount(key: string, n: number): string {
  const plural = key
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .replace(/\bapi\b/g, 'API');
  const words = n === 1 ? plural.replace(/ies$/, 'y').replace(/s$/, '') : plural;
  return `${n.toLocaleString()} ${words}`;
}

/** `/v1/exports/{id}/download`, as the browser reaches it (same origin, session cookie). */
const downloadHref = (id: string, format?: 'json' | 'csv') => `/v1/exports/${id}/download${format ? `?format=${format}` : ''}`;

const column = columnHelper<TExport>();

/**
 * The list's columns: the export id as an Identifier, times relative (exact on hover), the
 * contents in the server's own counts (whole on hover), the download links last.
 */
const COLUMNS = column.columns([
  column.accessor('id', {
    header: 'Export',
    enableSorting: false,
    meta: { width: '10rem' },
    cell: (info) => <Identifier value={info.getValue()} label="export id" testId="export-id" />,
  }),
  column.accessor('format', {
    header: 'Format',
    sortFn: 'text',
    meta: { width: '7rem' },
    cell: (info) => info.getValue().toUpperCase(),
  }),
  column.accessor('status', {
    header: 'Status',
    sortFn: 'text',
    meta: { width: '9rem' },
    cell: (info) => {
      const item = info.row.original;
      return (
        <span
          className={`pill ${item.status === 'completed' ? 'pill--on' : 'pill--off'}`}
          data-testid="export-status"
          title={item.error ?? undefined}
        >
          {item.status}
        </span>
      );
    },
  }),
  column.display({
    id: 'contents',
    header: 'Contents',
    cell: (info) => {
      const item = info.row.original;
      if (item.status === 'failed') {
        return (
          <span className="muted" data-testid="export-error" title={item.error ?? undefined}>
            {item.error ?? 'failed'}
          </span>
        );
      }
      const summary = Object.entries(item.counts)
        .map(([key, n]) => sectionCount(key, n))
        .join(' · ');
      const text = item.status === 'completed' ? summary || 'nothing yet' : '—';
      return (
        <span data-testid="export-contents" title={text}>
          {text}
        </span>
      );
    },
  }),
  whenColumn(column, 'createdAt', 'Requested'),
  whenColumn(column, 'asOf', 'Snapshot as of', {
    width: '11rem',
    description: 'The moment the worker read the data',
    shown: (item, at) => (item.status === 'completed' ? at : null),
  }),
  column.display({
    id: 'download',
    header: 'Download',
    meta: { width: '9rem' },
    cell: (info) => {
      const item = info.row.original;
      if (item.status !== 'completed') {
        return <span className="muted">{item.status === 'failed' ? 'create a new one' : 'when completed'}</span>;
      }
      const other = item.format === 'json' ? 'csv' : 'json';
      return (
        <span className="download-links">
          <a
            href={downloadHref(item.id)}
            download
            data-testid="export-download"
            aria-label={`Download ${item.id} as ${item.format.toUpperCase()}`}
          >
            {item.format.toUpperCase()}
          </a>
          <a
            href={downloadHref(item.id, other)}
            download
            data-testid="export-download-other"
            aria-label={`Download ${item.id} as ${other.toUpperCase()}`}
          >
            {other.toUpperCase()}
          </a>
        </span>
      );
    },
  }),
]);

/**
 * The organization's exports (org admins): create one as JSON or CSV, watch it go from pending
 * to completed, download it (in its own format or the other). The worker builds it; the page
 * polls while one is under way.
 */
export function ExportsPage() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const active = useActiveOrganization();
  const pager = usePager();
  const [creating, setCreating] = useState(false);
  const slug = active.organization?.slug;
  const exports = useQuery({
    ...trpc.exports.list.queryOptions({ organization_slug: slug, limit: PAGE_SIZE, cursor: pager.cursor }, { enabled: slug !== undefined }),
    placeholderData: keepPreviousData,
    refetchInterval: (query) => (query.state.data?.data.some((e) => e.status === 'pending' || e.status === 'running') ? POLL_MS : false),
  });

  return (
    <div data-testid="page-exports">
      <PageHeader
        title="Exports"
        description={`A snapshot of everything ${active.organization ? active.organization.name : 'this workspace'} owns: members, roles, invitations, applications, API keys, webhooks, sessions, the audit log, billing handoff and every usage event. Secrets (keys, token hashes, signing secrets, ciphertexts) are never included.`}
        actions={
          slug !== undefined && (
            <CreateExportDialog
              organizationSlug={slug}
              open={creating}
              onOpenChange={setCreating}
              onCreated={async (created) => {
                toast.success(`Export ${created.export.id} queued: it can be downloaded here once completed.`);
                // The new export is the newest: show the first page.
                pager.reset();
                await queryClient.invalidateQueries({ queryKey: trpc.exports.list.pathKey() });
              }}
            />
          )
        }
      />
      <ListPage
        testId="exports"
        noun="exports"
        workspace={active}
        query={exports}
        pager={pager}
        empty={{
          title: 'No exports yet.',
          next: 'Create one: the worker builds it, and it can be downloaded here once completed.',
          action: { label: 'Create export', onClick: () => setCreating(true) },
        }}
        rowKey={(item) => item.id}
        table={{
          columns: COLUMNS,
          rowAttributes: (item) => ({ 'data-testid': 'export-row', 'data-export-id': item.id, 'data-status': item.status }),
          minWidth: '64rem',
        }}
      />
    </div>
  );
}

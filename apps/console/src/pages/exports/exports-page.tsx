import { zodResolver } from '@hookform/resolvers/zod';
import { type TExport, ZCreateExportRequest } from '@svc/contracts/exports';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 20;
/** While an export is pending or running, the list is read again this often. */
const POLL_MS = 1_000;

const ZExportForm = ZCreateExportRequest.pick({ format: true });

/** The counts worth a glance, in the export's own words: [key, one, many]. */
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

const when = (iso: string | null) =>
  iso ? (
    <time dateTime={iso} title={iso}>
      {new Date(iso).toLocaleString()}
    </time>
  ) : (
    <span className="muted">—</span>
  );

/** `/v1/exports/{id}/download`, as the browser reaches it (same origin, session cookie). */
const downloadHref = (id: string, format?: 'json' | 'csv') => `/v1/exports/${id}/download${format ? `?format=${format}` : ''}`;

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
  const slug = active.organization?.slug;
  const exports = useQuery({
    ...trpc.exports.list.queryOptions({ organization_slug: slug, limit: PAGE_SIZE, cursor: pager.cursor }, { enabled: slug !== undefined }),
    placeholderData: keepPreviousData,
    refetchInterval: (query) => (query.state.data?.data.some((e) => e.status === 'pending' || e.status === 'running') ? POLL_MS : false),
  });
  const form = useForm({ resolver: zodResolver(ZExportForm), defaultValues: { format: 'json' as const } });
  const create = useMutation(
    trpc.exports.create.mutationOptions({
      onSettled: () => queryClient.invalidateQueries({ queryKey: trpc.exports.list.queryKey() }),
    }),
  );
  const submit = form.handleSubmit(async (values) => {
    pager.reset();
    await create.mutateAsync({ organization_slug: slug, format: values.format }).catch(() => undefined);
  });

  return (
    <div data-testid="page-exports">
      <PageHeader
        title="Exports"
        description={`A snapshot of everything ${active.organization ? active.organization.name : 'this workspace'} owns: members, roles, invitations, applications, API keys, webhooks, sessions, the audit log, billing handoff and every usage event. Secrets (keys, token hashes, signing secrets, ciphertexts) are never included.`}
      />
      <ListPage
        testId="exports"
        noun="exports"
        workspace={active}
        query={exports}
        pager={pager}
        empty={{
          title: 'No exports yet.',
          next: 'Create one above: the worker builds it, and it can be downloaded here once completed.',
          action: { label: 'Create export', onClick: () => void submit() },
        }}
        above={() => (
          <section className="panel" data-testid="export-create-panel">
            <h2 className="panel__title">New export</h2>
            <form className="form-row" onSubmit={submit} noValidate data-testid="export-form">
              <label className="form-field">
                <span>Format</span>
                <select data-testid="export-format" {...form.register('format')}>
                  <option value="json">JSON (one document)</option>
                  <option value="csv">CSV (one row per record, spreadsheet-safe)</option>
                </select>
              </label>
              <button type="submit" className="button button--primary" disabled={create.isPending} data-testid="export-create">
                {create.isPending ? 'Requesting…' : 'Create export'}
              </button>
            </form>
            {create.isSuccess && (
              <p className="muted" role="status" data-testid="export-created">
                Export <code>{create.data.export.id}</code> is queued: it appears below and can be downloaded once completed.
              </p>
            )}
            {create.isError && <ErrorPanel error={create.error} title="Could not create the export" />}
          </section>
        )}
        columns={['Export', 'Format', 'Status', 'Contents', 'Requested', 'Snapshot as of', 'Download']}
        rowKey={(item) => item.id}
        row={(item) => <ExportRow item={item} />}
      />
    </div>
  );
}

function ExportRow({ item }: { item: TExport }) {
  const other = item.format === 'json' ? 'csv' : 'json';
  const summary = Object.entries(item.counts).map(([key, n]) => sectionCount(key, n));
  return (
    <tr data-testid="export-row" data-export-id={item.id} data-status={item.status}>
      <td>
        <code>{item.id}</code>
      </td>
      <td>{item.format.toUpperCase()}</td>
      <td>
        <span className={`pill ${item.status === 'completed' ? 'pill--on' : 'pill--off'}`} data-testid="export-status">
          {item.status}
        </span>
        {item.error && (
          <div className="muted" data-testid="export-error">
            {item.error}
          </div>
        )}
      </td>
      <td data-testid="export-contents">{item.status === 'completed' ? summary.join(' · ') || 'nothing yet' : '—'}</td>
      <td>{when(item.createdAt)}</td>
      <td>{item.status === 'completed' ? when(item.asOf) : <span className="muted">—</span>}</td>
      <td>
        {item.status === 'completed' ? (
          <span style={{ display: 'inline-flex', gap: 12, whiteSpace: 'nowrap' }}>
            <a href={downloadHref(item.id)} download data-testid="export-download">
              Download {item.format.toUpperCase()}
            </a>
            <a href={downloadHref(item.id, other)} download data-testid="export-download-other">
              as {other.toUpperCase()}
            </a>
          </span>
        ) : (
          <span className="muted">{item.status === 'failed' ? 'create a new export' : 'when completed'}</span>
        )}
      </td>
    </tr>
  );
}

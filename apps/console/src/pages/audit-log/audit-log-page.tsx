import { zodResolver } from '@hookform/resolvers/zod';
import { type TAuditLogEntry, type TAuditLogFilters, ZAuditLogFilters } from '@svc/contracts/audit-logs';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { useForm } from 'react-hook-form';
import { Link, useSearchParams } from 'react-router';
import { actionsColumn, columnHelper, whenColumn } from '../../components/data-table.tsx';
import { Dialog } from '../../components/dialog.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { summaryLines, targetNameOf } from '../../lib/audit-summary.ts';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;
/** A filter applies once typing pauses this long (a date applies as soon as it is complete). */
const FILTER_DELAY_MS = 400;

/** What each kind of actor is called where its label is missing and beside its id. */
const ACTOR_NOUNS: Record<TAuditLogEntry['actor']['type'], string> = {
  user: 'user',
  api_key: 'API key',
  system: 'system',
  setup_link: 'setup link',
};
const NO_FILTERS: TAuditLogFilters = { action: undefined, actor: undefined, target: undefined, from: undefined, to: undefined };

/** An empty text field is "no filter". */
const optional = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined);

/** `<input type="datetime-local">` holds local wall-clock time; the API takes an ISO instant. */
function localToIso(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') {
    return undefined;
  }
  const at = new Date(value);
  return Number.isNaN(at.getTime()) ? value : at.toISOString();
}

/** The filters that narrow the list, without the unset ones: two sets compare equal by this. */
function filterKey(filters: TAuditLogFilters): string {
  return JSON.stringify(Object.entries(filters).filter(([, value]) => value !== undefined));
}

/** The audit log with one entry open: `?entry=<id>`, which a link or a reload opens again. */
function entrySearch(id: string): string {
  return `?${new URLSearchParams({ entry: id })}`;
}

/** How many of a summary's lines a row shows; the rest are in the row's details. */
const SUMMARY_LINES_IN_ROW = 3;

/** An action with a line-break opportunity after each dot: a long one wraps there, it is never cut. */
function ActionName({ action }: { action: string }) {
  const parts = action.split('.');
  return (
    <code className="audit-action" data-testid="audit-log-action" title={action}>
      {parts.map((part, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one fixed string, in order
        <span key={index}>
          {part}
          {index < parts.length - 1 && (
            <>
              .<wbr />
            </>
          )}
        </span>
      ))}
    </code>
  );
}

/**
 * The columns: when (relative, exact on hover), who (their email or the key's name, and the id
 * to filter by), the action (whole, wrapping at its dots), what it was done to (its type, its name
 * where the entry recorded one, and its id), and the summary as `field: value` lines (the first
 * three; all of them in the row's details).
 */
function auditColumns(showDetails: (entry: TAuditLogEntry) => void, organization: () => { id: string; name: string } | undefined) {
  const column = columnHelper<TAuditLogEntry>();
  return column.columns([
    whenColumn(column, 'createdAt', 'When', { testId: 'audit-log-time' }),
    column.accessor((entry) => entry.actor.label ?? entry.actor.id ?? entry.actor.type, {
      id: 'actor',
      header: 'Actor',
      sortFn: 'text',
      meta: { width: '15rem' },
      cell: (info) => {
        const actor = info.row.original.actor;
        return (
          <div data-testid="audit-log-actor">
            {actor.type === 'system' || actor.id === null ? (
              <span className="muted">system</span>
            ) : (
              <>
                <div title={actor.label ?? undefined}>{actor.label ?? ACTOR_NOUNS[actor.type]}</div>
                <Identifier value={actor.id} label={`${ACTOR_NOUNS[actor.type]} id`} />
              </>
            )}
          </div>
        );
      },
    }),
    column.accessor('action', {
      header: 'Action',
      sortFn: 'text',
      meta: { width: '13rem' },
      // The action opens the entry, at an address of its own (?entry=aud_...).
      cell: (info) => (
        <Link to={entrySearch(info.row.original.id)} className="audit-action-link" data-testid="audit-log-open">
          <ActionName action={info.getValue()} />
        </Link>
      ),
    }),
    column.accessor((entry) => entry.target.type, {
      id: 'target',
      header: 'Target',
      sortFn: 'text',
      meta: { width: '12rem' },
      cell: (info) => {
        const entry = info.row.original;
        const name = targetName(entry, organization());
        return (
          <div data-testid="audit-log-target">
            <div className="muted" title={entry.target.type}>
              {entry.target.type}
            </div>
            {name && (
              <div title={name}>
                <strong data-testid="audit-log-target-name">{name}</strong>
              </div>
            )}
            {entry.target.id && <Identifier value={entry.target.id} label={`${entry.target.type} id`} />}
          </div>
        );
      },
    }),
    column.accessor((entry) => JSON.stringify(entry.summary), {
      id: 'summary',
      header: 'Summary',
      enableSorting: false,
      cell: (info) => {
        const lines = summaryLines(info.row.original.summary);
        if (lines.length === 0) {
          return (
            <span className="muted" data-testid="audit-log-summary">
              —
            </span>
          );
        }
        const more = lines.length - SUMMARY_LINES_IN_ROW;
        return (
          <div data-testid="audit-log-summary">
            {lines.slice(0, SUMMARY_LINES_IN_ROW).map((line) => (
              <div key={line.key} title={`${line.key}: ${line.value}`} data-testid="audit-log-summary-line">
                <span className="muted">{line.key}:</span> {line.value}
              </div>
            ))}
            {more > 0 && (
              <button
                type="button"
                className="link-button"
                onClick={() => showDetails(info.row.original)}
                data-testid="audit-log-summary-more"
              >
                +{more} more
              </button>
            )}
          </div>
        );
      },
    }),
    actionsColumn(column, (entry) => (
      <RowActions
        name={`${entry.action} entry`}
        testId="audit-log-actions"
        actions={[{ label: 'Details…', testId: 'audit-log-details', onSelect: () => showDetails(entry) }]}
      />
    )),
  ]);
}

/**
 * Organization audit log, newest first, a page at a time: filters apply as soon as they are
 * complete and valid (the same schema the API uses words what is wrong); each entry's details
 * (request, client, the whole summary) open from its row.
 */
export function AuditLogPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const pager = usePager();
  const [filters, setFilters] = useState<TAuditLogFilters>({});
  const [params, setParams] = useSearchParams();
  const selected = params.get('entry');
  // One definition for the page's lifetime: the organization and the way to open an entry are
  // read through refs.
  const [organizationRef] = useState(() => ({ current: undefined as { id: string; name: string } | undefined }));
  organizationRef.current = active.organization ?? undefined;
  const showRef = useRef((id: string | null) => setParams(id ? { entry: id } : {}));
  showRef.current = (id) => setParams(id ? { entry: id } : {});
  const [columns] = useState(() =>
    auditColumns(
      (entry) => showRef.current(entry.id),
      () => organizationRef.current,
    ),
  );
  const form = useForm<TAuditLogFilters>({ resolver: zodResolver(ZAuditLogFilters), defaultValues: NO_FILTERS });
  const errors = form.formState.errors;

  const organizationSlug = active.organization?.slug;
  const log = useQuery({
    ...trpc.auditLogs.list.queryOptions(
      { organization_slug: organizationSlug, ...filters, limit: PAGE_SIZE, cursor: pager.cursor },
      { enabled: organizationSlug !== undefined },
    ),
    // Keep the current page on screen while the next one loads.
    placeholderData: keepPreviousData,
  });

  // Only a change of filter starts again at page 1.
  const [applied] = useState(() => ({ key: filterKey({}) }));
  const apply = form.handleSubmit((values) => {
    const key = filterKey(values);
    if (key !== applied.key) {
      applied.key = key;
      setFilters(values);
      pager.reset();
    }
  });
  // Every change applies once typing pauses: valid filters narrow the list, an invalid one says why.
  const latest = useRef(apply);
  latest.current = apply;
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const subscription = form.watch(() => {
      clearTimeout(timer);
      timer = setTimeout(() => void latest.current(), FILTER_DELAY_MS);
    });
    return () => {
      clearTimeout(timer);
      subscription.unsubscribe();
    };
  }, [form]);
  const filtered = Object.values(filters).some((v) => v !== undefined);
  const clear = () => {
    form.reset(NO_FILTERS);
    applied.key = filterKey({});
    setFilters({});
    pager.reset();
  };

  return (
    <div data-testid="page-audit-log">
      <PageHeader
        title="Audit log"
        description={`Who changed what and when${active.organization ? ` in ${active.organization.name}` : ''}. Entries are never edited or removed.`}
      />
      {selected && organizationSlug && (
        <AuditEntryDialog
          id={selected}
          organizationSlug={organizationSlug}
          listed={log.data?.data.find((entry) => entry.id === selected)}
          organization={active.organization ?? undefined}
          onClose={() => showRef.current(null)}
        />
      )}
      <ListPage
        testId="audit-log"
        noun="audit log entries"
        workspace={active}
        query={log}
        pager={pager}
        filtered={filtered ? { title: 'No entries match these filters.', clear } : undefined}
        empty={{ title: 'No entries yet.', next: 'Every change to this organization, by a person or an API key, is recorded here.' }}
        above={() => (
          <form className="form-row" onSubmit={apply} data-testid="audit-log-filters" noValidate>
            <label className="form-field">
              <span>Action</span>
              <input
                placeholder="user.created or user.*"
                data-testid="audit-filter-action"
                {...form.register('action', { setValueAs: optional })}
              />
              {errors.action && <span className="form-field__error">{errors.action.message}</span>}
            </label>
            <label className="form-field">
              <span>Actor</span>
              <input
                placeholder="an email, usr_... or key_..."
                data-testid="audit-filter-actor"
                {...form.register('actor', { setValueAs: optional })}
              />
              {errors.actor && <span className="form-field__error">{errors.actor.message}</span>}
            </label>
            <label className="form-field">
              <span>Target</span>
              <input
                placeholder="an id, e.g. ten_..."
                data-testid="audit-filter-target"
                {...form.register('target', { setValueAs: optional })}
              />
              {errors.target && <span className="form-field__error">{errors.target.message}</span>}
            </label>
            <label className="form-field">
              <span>From (inclusive)</span>
              <input
                type="datetime-local"
                step="1"
                data-testid="audit-filter-from"
                {...form.register('from', { setValueAs: localToIso })}
              />
              {errors.from && <span className="form-field__error">{errors.from.message}</span>}
            </label>
            <label className="form-field">
              <span>To (exclusive)</span>
              <input type="datetime-local" step="1" data-testid="audit-filter-to" {...form.register('to', { setValueAs: localToIso })} />
              {errors.to && <span className="form-field__error">{errors.to.message}</span>}
            </label>
            <button type="button" className="button" onClick={clear} data-testid="audit-filter-clear">
              Clear
            </button>
          </form>
        )}
        rowKey={(entry) => entry.id}
        table={{
          columns,
          rowAttributes: (entry) => ({ 'data-testid': 'audit-log-row', 'data-entry-id': entry.id, 'data-action': entry.action }),
          minWidth: '64rem',
        }}
      />
    </div>
  );
}

/** The target's name where known: what the entry recorded, or the organization's own. */
function targetName(entry: TAuditLogEntry, organization: { id: string; name: string } | undefined): string | undefined {
  const recorded = targetNameOf(entry.summary);
  if (recorded) {
    return recorded;
  }
  return entry.target.type === 'tenant' && organization && entry.target.id === organization.id ? organization.name : undefined;
}

/**
 * One entry in full: the exact time, who, from where, and the whole summary as `field: value`
 * lines. The entry of the page on screen at once; one opened by its address alone is fetched.
 */
function AuditEntryDialog({
  id,
  organizationSlug,
  listed,
  organization,
  onClose,
}: {
  id: string;
  organizationSlug: string;
  listed: TAuditLogEntry | undefined;
  organization: { id: string; name: string } | undefined;
  onClose: () => void;
}) {
  const trpc = useTRPC();
  const fetched = useQuery(trpc.auditLogs.get.queryOptions({ id, organization_slug: organizationSlug }, { enabled: listed === undefined }));
  const entry = listed ?? fetched.data;
  return (
    <Dialog
      open
      onOpenChange={(open) => !open && onClose()}
      title={entry ? entry.action : 'Audit log entry'}
      wide
      testId="audit-log-detail"
      footer={
        <button type="button" className="button" onClick={onClose} data-testid="audit-log-detail-close">
          Close
        </button>
      }
    >
      {!entry && fetched.isPending && <Skeleton label="Loading the entry…" testId="audit-log-detail-loading" lines={6} />}
      {!entry && fetched.isError && (
        <ErrorPanel error={fetched.error} title="Could not load the entry" onRetry={() => void fetched.refetch()} />
      )}
      {entry && (
        <dl className="facts" data-entry-id={entry.id}>
          <dt>When</dt>
          <dd>
            <When at={entry.createdAt} empty="—" />
          </dd>
          <dt>Actor</dt>
          <dd>
            {entry.actor.type}
            {entry.actor.label && ` · ${entry.actor.label}`}
            {entry.actor.id && (
              <div>
                <Identifier value={entry.actor.id} label="actor id" />
              </div>
            )}
          </dd>
          <dt>Target</dt>
          <dd>
            {entry.target.type}
            {targetName(entry, organization) && ` · ${targetName(entry, organization)}`}
            {entry.target.id && (
              <div>
                <Identifier value={entry.target.id} label="target id" />
              </div>
            )}
          </dd>
          <dt>Entry</dt>
          <dd>
            <Identifier value={entry.id} label="entry id" />
          </dd>
          <dt>Request</dt>
          <dd>{entry.requestId ? <Identifier value={entry.requestId} label="request id" /> : <span className="muted">—</span>}</dd>
          <dt>Client</dt>
          <dd data-testid="audit-log-detail-client">
            {entry.ipAddress ?? <span className="muted">no address</span>}
            {entry.userAgent && <div className="muted">{entry.userAgent}</div>}
          </dd>
          <dt>Summary</dt>
          <dd>
            {summaryLines(entry.summary).length === 0 ? (
              <span className="muted">nothing recorded</span>
            ) : (
              <ul className="audit-summary" data-testid="audit-log-detail-summary">
                {summaryLines(entry.summary).map((line) => (
                  <li key={line.key} data-testid="audit-log-detail-summary-line">
                    <span className="muted">{line.key}:</span> {line.value}
                  </li>
                ))}
              </ul>
            )}
            <details className="audit-raw">
              <summary>As JSON</summary>
              <pre style={{ margin: 0, overflowX: 'auto', maxHeight: '20rem' }} data-testid="audit-log-detail-json">
                {JSON.stringify(entry.summary, null, 2)}
              </pre>
            </details>
          </dd>
        </dl>
      )}
    </Dialog>
  );
}

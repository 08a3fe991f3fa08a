import { zodResolver } from '@hookform/resolvers/zod';
import { type TAuditLogEntry, type TAuditLogFilters, ZAuditLogFilters } from '@svc/contracts/audit-logs';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;

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

/** Organization audit log: filters, newest first, Previous / Next by cursor. */
export function AuditLogPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const pager = usePager();
  const [filters, setFilters] = useState<TAuditLogFilters>({});
  const form = useForm<TAuditLogFilters>({ resolver: zodResolver(ZAuditLogFilters) });
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

  const apply = form.handleSubmit((values) => {
    setFilters(values);
    pager.reset();
  });
  const filtered = Object.values(filters).some((v) => v !== undefined);
  const clear = () => {
    form.reset({ action: undefined, actor: undefined, target: undefined, from: undefined, to: undefined });
    setFilters({});
    pager.reset();
  };

  return (
    <div data-testid="page-audit-log">
      <PageHeader
        title="Audit log"
        description={`Who changed what and when${active.organization ? ` in ${active.organization.name}` : ''}. Entries are never edited or removed.`}
      />

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
                placeholder="usr_... or key_..."
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
            <button type="submit" className="button button--primary" data-testid="audit-filter-apply">
              Apply
            </button>
            <button type="button" className="button" onClick={clear} data-testid="audit-filter-clear">
              Clear
            </button>
          </form>
        )}
        columns={['Time', 'Actor', 'Action', 'Target', 'Summary']}
        rowKey={(entry) => entry.id}
        row={(entry) => <AuditLogRow entry={entry} />}
      />
    </div>
  );
}

function AuditLogRow({ entry }: { entry: TAuditLogEntry }) {
  const summary = JSON.stringify(entry.summary);
  return (
    <tr data-testid="audit-log-row" data-entry-id={entry.id}>
      <td data-testid="audit-log-time">
        <time dateTime={entry.createdAt} title={entry.createdAt}>
          {new Date(entry.createdAt).toLocaleString()}
        </time>
      </td>
      <td data-testid="audit-log-actor">
        {entry.actor.type === 'system' ? (
          <span className="muted">system</span>
        ) : (
          <>
            <div>{entry.actor.label ?? entry.actor.type}</div>
            <code className="muted">{entry.actor.id}</code>
          </>
        )}
      </td>
      <td data-testid="audit-log-action">
        <code style={{ whiteSpace: 'nowrap' }}>{entry.action}</code>
      </td>
      <td data-testid="audit-log-target">
        <div>{entry.target.type}</div>
        {entry.target.id && <code className="muted">{entry.target.id}</code>}
      </td>
      <td data-testid="audit-log-summary">
        {summary === '{}' ? (
          <span className="muted">—</span>
        ) : (
          <code title={summary}>{summary.length > 160 ? `${summary.slice(0, 160)}…` : summary}</code>
        )}
        {entry.requestId && (
          <div className="muted" title="request id">
            {entry.requestId}
          </div>
        )}
      </td>
    </tr>
  );
}

import type { TWebhookEndpoint, TWebhookEndpointWithSecret } from '@svc/contracts/webhooks';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { toast } from 'sonner';
import { Chips } from '../../components/chips.tsx';
import { actionsColumn, columnHelper } from '../../components/data-table.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { SecretOnceDialog } from '../../components/secret-once.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { parseError } from '../../lib/errors.ts';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';
import { WebhookEndpointDialog } from './webhook-endpoint-form.tsx';
import { WebhookReplayDialog } from './webhook-replay-form.tsx';

const PAGE_SIZE = 50;

/** An endpoint's own page in the console: shareable, and kept by reload and the back button. */
export const endpointPath = (id: string) => `/webhooks/${encodeURIComponent(id)}`;

/** A signing secret the api has just returned: in its dialog until dismissed, never fetched again. */
type Revealed = { title: string; endpointId: string; secret: string };

/** What the row menus ask the page to open: the edit or replay dialog of one endpoint, or a secret. */
type RowHandlers = {
  onEdit: (endpoint: TWebhookEndpoint) => void;
  onReplay: (endpoint: TWebhookEndpoint) => void;
  onRotated: (rotated: TWebhookEndpointWithSecret) => Promise<void>;
};

/** An endpoint's name in confirmations: its description, or its URL when it has none. */
const nameOf = (endpoint: TWebhookEndpoint) => endpoint.description || endpoint.url;

/**
 * The list's columns: the endpoint (description over its URL, an Identifier), its event types as
 * chips, status, health, when its secret last changed, and the row's menu.
 */
function endpointColumns(organizationSlug: () => string, handlers: RowHandlers) {
  const column = columnHelper<TWebhookEndpoint>();
  return column.columns([
    column.accessor('url', {
      header: 'Endpoint',
      sortFn: 'text',
      cell: (info) => {
        const endpoint = info.row.original;
        return (
          <div className="stack">
            {/* The description (else "Endpoint") opens the endpoint's own page, /webhooks/<id>. */}
            <Link to={endpointPath(endpoint.id)} data-testid="webhook-name" title={endpoint.description ?? endpoint.url}>
              {endpoint.description ? <span data-testid="webhook-description">{endpoint.description}</span> : 'Endpoint details'}
            </Link>
            <Identifier value={endpoint.url} label="endpoint URL" tail={16} testId="webhook-url" />
          </div>
        );
      },
    }),
    column.accessor('id', {
      header: 'ID',
      enableSorting: false,
      meta: { width: '9.5rem' },
      cell: (info) => <Identifier value={info.getValue()} label="endpoint id" testId="webhook-id" />,
    }),
    column.accessor((endpoint) => endpoint.eventTypes.join(' '), {
      id: 'eventTypes',
      header: 'Event types',
      enableSorting: false,
      meta: { width: '15rem' },
      cell: (info) => <Chips names={info.row.original.eventTypes} testId="webhook-event-types" />,
    }),
    column.accessor((endpoint) => (endpoint.enabled ? 'enabled' : 'disabled'), {
      id: 'status',
      header: 'Status',
      sortFn: 'text',
      meta: { width: '7.5rem' },
      cell: (info) => {
        const endpoint = info.row.original;
        if (endpoint.enabled) {
          return (
            <span className="pill pill--on" data-testid="webhook-status">
              enabled
            </span>
          );
        }
        const reason = endpoint.disabledReason === 'gone' ? 'the receiver answered 410 Gone' : 'by an admin';
        return (
          <span className="pill pill--off" data-testid="webhook-status" title={`Disabled ${reason}`} data-reason={reason}>
            disabled
          </span>
        );
      },
    }),
    column.accessor((endpoint) => (endpoint.health.failing ? -1 : (endpoint.health.successRate ?? 2)), {
      id: 'health',
      header: 'Health (24 h)',
      sortFn: 'basic',
      meta: {
        width: '10rem',
        description: 'Of the deliveries of the last 24 hours that were attempted, the share that succeeded, and the last error',
      },
      cell: (info) => <EndpointHealth health={info.row.original.health} />,
    }),
    column.accessor((endpoint) => endpoint.secretRotatedAt ?? '', {
      id: 'secret',
      header: 'Secret rotated',
      sortFn: 'text',
      meta: { width: '11rem' },
      cell: (info) => {
        const endpoint = info.row.original;
        return (
          <span
            data-testid="webhook-secret-rotated"
            data-grace={endpoint.previousSecretExpiresAt ? 'true' : undefined}
            title={
              endpoint.previousSecretExpiresAt
                ? `The old secret also signs until ${new Date(endpoint.previousSecretExpiresAt).toLocaleString()}`
                : undefined
            }
          >
            <When at={endpoint.secretRotatedAt} empty="never" format="relative" />
          </span>
        );
      },
    }),
    actionsColumn(column, (endpoint) => <EndpointActions endpoint={endpoint} organizationSlug={organizationSlug()} {...handlers} />),
  ]);
}

/**
 * An endpoint's health (docs/api.md "Webhooks"): "Failing" when its receiver's last answer was a
 * failure, the share of the last 24 hours' deliveries that succeeded, and the last error under it
 * (the whole of it on hover).
 */
function EndpointHealth({ health }: { health: TWebhookEndpoint['health'] }) {
  if (health.successRate === null) {
    return (
      <span className="muted" data-testid="webhook-health" data-failing="false">
        no deliveries
      </span>
    );
  }
  const rate = `${Math.floor(health.successRate * 100)}% delivered`;
  const error = health.lastError;
  const said = error && [error.statusCode !== null ? `HTTP ${error.statusCode}` : error.outcome, error.error].filter(Boolean).join(': ');
  return (
    <div className="stack" data-testid="webhook-health" data-failing={String(health.failing)}>
      <span>
        {health.failing && (
          <span className="pill pill--danger" data-testid="webhook-failing">
            Failing
          </span>
        )}{' '}
        <span data-testid="webhook-success-rate" title={`${health.succeeded} of ${health.attempted} deliveries succeeded`}>
          {rate}
        </span>
      </span>
      {error && said && (
        <span className="muted" data-testid="webhook-last-error" title={`${new Date(error.at).toLocaleString()}: ${said}`}>
          {said}
        </span>
      )}
    </div>
  );
}

/**
 * Webhook endpoints of the active organization: create (secret once), edit, enable/disable, rotate,
 * test, replay, delete; one endpoint's page at /webhooks/<id> (one route, `webhooks/:id?`, so a
 * secret revealed on either stays open).
 */
export function WebhooksPage() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const active = useActiveOrganization();
  const pager = usePager();
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<TWebhookEndpoint | null>(null);
  const [replaying, setReplaying] = useState<TWebhookEndpoint | null>(null);
  const [revealed, setRevealed] = useState<Revealed | null>(null);
  const selected = useParams().id ?? null;
  const organizationSlug = active.organization?.slug;
  const endpoints = useQuery({
    ...trpc.webhooks.endpoint.list.queryOptions(
      { organization_slug: organizationSlug, limit: PAGE_SIZE, cursor: pager.cursor },
      { enabled: organizationSlug !== undefined },
    ),
    placeholderData: keepPreviousData,
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.webhooks.pathKey() });
  const create = useMutation(trpc.webhooks.endpoint.create.mutationOptions());
  const update = useMutation(trpc.webhooks.endpoint.update.mutationOptions({ onSuccess: refresh }));
  const reveal = async (title: string, shown: TWebhookEndpointWithSecret) => {
    setRevealed({ title, endpointId: shown.endpoint.id, secret: shown.secret });
    pager.reset();
    await refresh();
  };
  // One definition for the page's lifetime: the handlers only read state setters and the query client.
  const [slugRef] = useState(() => ({ current: '' }));
  slugRef.current = organizationSlug ?? '';
  const [handlers] = useState<RowHandlers>(() => ({
    onEdit: setEditing,
    onReplay: setReplaying,
    onRotated: (rotated) => reveal(`New signing secret for ${nameOf(rotated.endpoint)}`, rotated),
  }));
  const [columns] = useState(() => endpointColumns(() => slugRef.current, handlers));

  return (
    <div data-testid="page-webhooks">
      <PageHeader
        title="Webhooks"
        description={`Endpoints that receive signed events from ${active.organization ? active.organization.name : 'this workspace'}.`}
        actions={
          <>
            <Link className="button" to="/webhook-deliveries" data-testid="webhooks-deliveries-link">
              Deliveries
            </Link>
            {organizationSlug !== undefined && (
              <WebhookEndpointDialog
                mode="create"
                open={creating}
                onOpenChange={(next) => {
                  if (!next) {
                    create.reset();
                  }
                  setCreating(next);
                }}
                trigger={
                  <button type="button" className="button button--primary" data-testid="webhook-create-open">
                    Add endpoint
                  </button>
                }
                pending={create.isPending}
                error={create.error}
                onSubmit={async (values) => {
                  const created = await create.mutateAsync({ organization_slug: organizationSlug, ...values }).catch(() => undefined);
                  if (!created) {
                    return false;
                  }
                  await reveal('Endpoint created', created);
                  return true;
                }}
              />
            )}
          </>
        }
      />
      {editing && organizationSlug !== undefined && (
        <WebhookEndpointDialog
          key={editing.id}
          mode="edit"
          open
          onOpenChange={(next) => {
            if (!next) {
              update.reset();
              setEditing(null);
            }
          }}
          defaultValues={{ url: editing.url, eventTypes: editing.eventTypes, description: editing.description ?? '' }}
          pending={update.isPending}
          error={update.error}
          onSubmit={async (values) => {
            const saved = await update
              .mutateAsync({ id: editing.id, organization_slug: organizationSlug, ...values })
              .catch(() => undefined);
            return saved !== undefined;
          }}
        />
      )}
      {replaying && organizationSlug !== undefined && (
        <WebhookReplayDialog
          key={replaying.id}
          endpoint={replaying}
          organizationSlug={organizationSlug}
          onClose={() => setReplaying(null)}
        />
      )}
      <SecretOnceDialog
        revealed={revealed && { title: revealed.title, value: revealed.secret }}
        onDismiss={() => setRevealed(null)}
        description={
          <>
            Verify every delivery with it (Standard Webhooks: the <code>webhook-signature</code> header). This is the only time svc shows
            it.
          </>
        }
        label="Signing secret"
        storedAs="it encrypted"
        bodyAttributes={revealed ? { 'data-endpoint-id': revealed.endpointId, 'data-testid': 'webhook-secret-endpoint' } : undefined}
        testId="webhook-secret-revealed"
        secretTestId="webhook-secret"
      />
      {selected ? (
        <>
          <p className="breadcrumb">
            <Link to="/webhooks" data-testid="webhook-detail-back">
              ← Webhooks
            </Link>
          </p>
          {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
          {active.isLoading && <Skeleton label="Loading the endpoint…" testId="webhook-detail-loading" />}
          {organizationSlug !== undefined && (
            <EndpointDetail key={selected} id={selected} organizationSlug={organizationSlug} handlers={handlers} />
          )}
        </>
      ) : (
        <ListPage
          testId="webhooks"
          noun="endpoints"
          title="Endpoints"
          workspace={active}
          query={endpoints}
          pager={pager}
          empty={{
            title: 'No endpoints yet.',
            next: 'Add one: svc POSTs each event you tick to it, signed.',
            action: { label: 'Add endpoint', onClick: () => setCreating(true) },
          }}
          rowKey={(endpoint) => endpoint.id}
          table={{
            columns,
            rowAttributes: (endpoint) => ({
              'data-testid': 'webhook-row',
              'data-endpoint-id': endpoint.id,
              'data-enabled': String(endpoint.enabled),
            }),
            minWidth: '74rem',
          }}
        />
      )}
    </div>
  );
}

/**
 * The row's "⋯" menu: Send test event, Edit…, Replay…, View deliveries, Retry failed deliveries…, Rotate secret…,
 * Disable…/Enable, then (separated) Delete endpoint…, confirmed by typing its description or URL.
 */
function EndpointActions({
  endpoint,
  organizationSlug,
  onEdit,
  onReplay,
  onRotated,
  testId = 'webhook-actions',
  onDeleted,
}: { endpoint: TWebhookEndpoint; organizationSlug: string; testId?: string; onDeleted?: () => void } & RowHandlers) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.webhooks.pathKey() });
  const update = useMutation(trpc.webhooks.endpoint.update.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.webhooks.endpoint.delete.mutationOptions({ onSuccess: refresh }));
  const rotate = useMutation(trpc.webhooks.endpoint.rotateSecret.mutationOptions());
  const test = useMutation(trpc.webhooks.endpoint.test.mutationOptions({ onSuccess: refresh }));
  const retryFailed = useMutation(trpc.webhooks.endpoint.retryFailed.mutationOptions({ onSuccess: refresh }));
  const ref = { id: endpoint.id, organization_slug: organizationSlug };
  const name = nameOf(endpoint);
  const deliveries = `/webhook-deliveries?endpoint_id=${endpoint.id}`;

  const sendTest = () => {
    test.mutate(ref, {
      onSuccess: (queued) =>
        toast.success(`Test event queued for ${name}`, {
          duration: 15_000,
          action: { label: 'Open delivery', onClick: () => navigate(`${deliveries}&delivery=${queued.delivery.id}`) },
        }),
      onError: (error) => toast.error(`Could not send the test event: ${parseError(error).message}`),
    });
  };

  return (
    <RowActions
      name={name}
      testId={testId}
      actions={[
        { label: 'Send test event', testId: 'webhook-test', disabled: !endpoint.enabled || test.isPending, onSelect: sendTest },
        { label: 'Edit…', testId: 'webhook-edit', onSelect: () => onEdit(endpoint) },
        { label: 'Replay…', testId: 'webhook-replay', disabled: !endpoint.enabled, onSelect: () => onReplay(endpoint) },
        { label: 'View deliveries', testId: 'webhook-deliveries', onSelect: () => navigate(deliveries) },
        {
          label: 'Retry failed deliveries…',
          testId: 'webhook-retry-failed',
          disabled: !endpoint.enabled,
          confirm: {
            title: `Retry the failed deliveries of ${name}?`,
            consequence: `Every failed or retrying delivery of this endpoint (${endpoint.health.unsucceeded} in the last 24 hours) is sent again now, its earlier attempts kept. Fix the receiver first.`,
            confirmLabel: 'Retry failed deliveries',
            tone: 'primary',
            testId: 'webhook-retry-failed-dialog',
            onConfirm: async () => {
              const retried = await retryFailed.mutateAsync(ref);
              toast.success(
                retried.count === 0
                  ? `No failed deliveries to retry for ${name}`
                  : `${retried.count} ${retried.count === 1 ? 'delivery' : 'deliveries'} of ${name} queued again${retried.more ? ': more are waiting, retry again' : ''}`,
                { action: { label: 'View deliveries', onClick: () => navigate(deliveries) } },
              );
            },
          },
        },
        {
          label: 'Rotate secret…',
          testId: 'webhook-rotate',
          confirm: {
            title: `Rotate the signing secret of ${name}?`,
            consequence:
              'A new secret is shown once. During the grace period deliveries carry signatures made with both secrets, so switch your receiver to the new one before it ends.',
            confirmLabel: 'Rotate secret',
            tone: 'primary',
            testId: 'webhook-rotate-dialog',
            onConfirm: async () => onRotated(await rotate.mutateAsync(ref)),
          },
        },
        endpoint.enabled
          ? {
              label: 'Disable…',
              testId: 'webhook-disable',
              confirm: {
                title: `Disable the endpoint ${name}?`,
                consequence: 'No new events are delivered to it until you enable it again; deliveries already queued fail.',
                confirmLabel: 'Disable endpoint',
                testId: 'webhook-disable-dialog',
                onConfirm: () => update.mutateAsync({ ...ref, enabled: false }),
              },
            }
          : {
              label: 'Enable',
              testId: 'webhook-enable',
              onSelect: () =>
                update.mutate(
                  { ...ref, enabled: true },
                  { onError: (error) => toast.error(`Could not enable the endpoint: ${parseError(error).message}`) },
                ),
            },
        {
          label: 'Delete endpoint…',
          testId: 'webhook-delete',
          destructive: true,
          confirm: {
            title: `Delete the endpoint ${name}?`,
            consequence: 'Its deliveries and their history are deleted with it. This cannot be undone.',
            confirmLabel: 'Delete endpoint',
            typeToConfirm: name,
            testId: 'webhook-delete-dialog',
            onConfirm: async () => {
              await remove.mutateAsync(ref);
              onDeleted?.();
            },
          },
        },
      ]}
    />
  );
}

/**
 * One endpoint on its own page: where it posts, what it receives, its status and health over the
 * last 24 hours, its secret's rotation, and the same menu as its row.
 */
function EndpointDetail({ id, organizationSlug, handlers }: { id: string; organizationSlug: string; handlers: RowHandlers }) {
  const trpc = useTRPC();
  const navigate = useNavigate();
  const endpoint = useQuery(trpc.webhooks.endpoint.get.queryOptions({ id, organization_slug: organizationSlug }));
  const data = endpoint.data;
  return (
    <section className="panel" data-testid="webhook-detail" data-endpoint-id={id}>
      <div className="panel__header">
        <h2 className="panel__title">{data ? nameOf(data) : 'Endpoint'}</h2>
        <div className="panel__actions">
          <Link className="button" to={`/webhook-deliveries?endpoint_id=${encodeURIComponent(id)}`} data-testid="webhook-detail-deliveries">
            Deliveries
          </Link>
          {data && (
            <EndpointActions
              endpoint={data}
              organizationSlug={organizationSlug}
              testId="webhook-detail-actions"
              onDeleted={() => void navigate('/webhooks')}
              {...handlers}
            />
          )}
        </div>
      </div>
      {endpoint.isPending && <Skeleton label="Loading the endpoint…" testId="webhook-endpoint-loading" />}
      {endpoint.isError && (
        <ErrorPanel error={endpoint.error} title="Could not load the endpoint" onRetry={() => void endpoint.refetch()} />
      )}
      {data && (
        <dl className="facts" data-testid="webhook-detail-facts">
          <dt>URL</dt>
          <dd>
            <Identifier value={data.url} label="endpoint URL" tail={16} testId="webhook-detail-url" />
          </dd>
          <dt>Endpoint ID</dt>
          <dd>
            <Identifier value={data.id} label="endpoint id" testId="webhook-detail-id" />
          </dd>
          <dt>Description</dt>
          <dd data-testid="webhook-detail-description">{data.description || <span className="muted">none</span>}</dd>
          <dt>Status</dt>
          <dd data-testid="webhook-detail-status">
            {data.enabled ? (
              <span className="pill pill--on">enabled</span>
            ) : (
              <>
                <span className="pill pill--off">disabled</span>{' '}
                <span className="muted">{data.disabledReason === 'gone' ? 'the receiver answered 410 Gone' : 'by an admin'}</span>
              </>
            )}
          </dd>
          <dt>Health (24 h)</dt>
          <dd>
            <EndpointHealth health={data.health} />
          </dd>
          <dt>Event types</dt>
          <dd data-testid="webhook-detail-event-types">
            <ul className="url-list">
              {data.eventTypes.map((type) => (
                <li key={type}>
                  <code>{type}</code>
                </li>
              ))}
            </ul>
          </dd>
          <dt>Secret rotated</dt>
          <dd>
            <When at={data.secretRotatedAt} empty="never" />
            {data.previousSecretExpiresAt && (
              <span className="muted">
                {' '}
                the old secret also signs until <When at={data.previousSecretExpiresAt} empty="—" />
              </span>
            )}
          </dd>
          <dt>Created</dt>
          <dd>
            <When at={data.createdAt} empty="—" />
          </dd>
        </dl>
      )}
    </section>
  );
}

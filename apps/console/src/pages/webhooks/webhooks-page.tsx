import type { TWebhookEndpoint, TWebhookEndpointWithSecret } from '@svc/contracts/webhooks';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { focusField } from '../../components/empty-state.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { SecretOnce } from '../../components/secret-once.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';
import { URL_FIELD_ID, WebhookEndpointForm } from './webhook-endpoint-form.tsx';
import { WebhookReplayForm } from './webhook-replay-form.tsx';

const PAGE_SIZE = 50;

/** A signing secret the api has just returned: on screen until dismissed or the page is left. */
type Revealed = { title: string; endpointId: string; secret: string };

/** Webhook endpoints of the active organization: create (secret once), edit, enable/disable, rotate, test, delete. */
export function WebhooksPage() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const active = useActiveOrganization();
  const pager = usePager();
  const [revealed, setRevealed] = useState<Revealed | null>(null);
  const organizationSlug = active.organization?.slug;
  const endpoints = useQuery({
    ...trpc.webhooks.endpoint.list.queryOptions(
      { organization_slug: organizationSlug, limit: PAGE_SIZE, cursor: pager.cursor },
      { enabled: organizationSlug !== undefined },
    ),
    placeholderData: keepPreviousData,
  });
  const create = useMutation(trpc.webhooks.endpoint.create.mutationOptions());
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.webhooks.endpoint.pathKey() });
  const reveal = async (title: string, shown: TWebhookEndpointWithSecret) => {
    setRevealed({ title, endpointId: shown.endpoint.id, secret: shown.secret });
    pager.reset();
    await refresh();
  };

  return (
    <div data-testid="page-webhooks">
      <PageHeader
        title="Webhooks"
        description={`Endpoints that receive signed events from ${active.organization ? active.organization.name : 'this workspace'}.`}
        actions={
          <Link className="button" to="/webhook-deliveries" data-testid="webhooks-deliveries-link">
            Deliveries
          </Link>
        }
      />
      <ListPage
        testId="webhooks"
        noun="endpoints"
        title="Endpoints"
        workspace={active}
        query={endpoints}
        pager={pager}
        empty={{
          title: 'No endpoints yet.',
          next: 'Add one above: svc POSTs each event you tick to it, signed.',
          action: { label: 'Add an endpoint', onClick: focusField(URL_FIELD_ID) },
        }}
        above={(organization) => (
          <>
            {revealed && (
              <section className="panel" data-testid="webhook-secret-revealed" data-endpoint-id={revealed.endpointId}>
                <h2 className="panel__title">{revealed.title}</h2>
                <p className="muted">
                  Verify every delivery with it (Standard Webhooks: the <code>webhook-signature</code> header). It is not shown again.
                </p>
                <SecretOnce label="Signing secret" value={revealed.secret} testId="webhook-secret" storedAs="it encrypted" />
                <button type="button" className="button" onClick={() => setRevealed(null)} data-testid="webhook-secret-dismiss">
                  I have stored it
                </button>
              </section>
            )}
            <section className="panel" data-testid="webhook-create-panel">
              <h2 className="panel__title">New endpoint</h2>
              <p className="muted">
                svc POSTs each event you tick to this URL, signed with the endpoint's secret, and retries failures for about a day.
              </p>
              <WebhookEndpointForm
                mode="create"
                pending={create.isPending}
                onSubmit={async (values) => {
                  const created = await create.mutateAsync({ organization_slug: organization.slug, ...values }).catch(() => undefined);
                  if (!created) {
                    return false;
                  }
                  await reveal('Endpoint created', created);
                  return true;
                }}
              />
              {create.isError && <ErrorPanel error={create.error} title="Could not create the endpoint" />}
            </section>
          </>
        )}
        columns={['Endpoint', 'Event types', 'Status', 'Secret', 'Actions']}
        rowKey={(endpoint) => endpoint.id}
        row={(endpoint, organization) => (
          <EndpointRow
            endpoint={endpoint}
            organizationSlug={organization.slug}
            onRotated={(rotated) => reveal(`New signing secret for ${rotated.endpoint.url}`, rotated)}
          />
        )}
      />
    </div>
  );
}

function StatusPill({ endpoint }: { endpoint: TWebhookEndpoint }) {
  if (endpoint.enabled) {
    return (
      <span className="pill pill--on" data-testid="webhook-status">
        enabled
      </span>
    );
  }
  return (
    <>
      <span className="pill pill--off" data-testid="webhook-status">
        disabled
      </span>
      <div className="muted" data-testid="webhook-disabled-reason">
        {endpoint.disabledReason === 'gone' ? 'the receiver answered 410 Gone' : 'by an admin'}
      </div>
    </>
  );
}

function EndpointRow({
  endpoint,
  organizationSlug,
  onRotated,
}: {
  endpoint: TWebhookEndpoint;
  organizationSlug: string;
  onRotated: (rotated: TWebhookEndpointWithSecret) => Promise<void>;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState(false);
  const [replaying, setReplaying] = useState(false);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.webhooks.pathKey() });
  const update = useMutation(trpc.webhooks.endpoint.update.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.webhooks.endpoint.delete.mutationOptions({ onSuccess: refresh }));
  const rotate = useMutation(trpc.webhooks.endpoint.rotateSecret.mutationOptions());
  const test = useMutation(trpc.webhooks.endpoint.test.mutationOptions({ onSuccess: refresh }));
  const ref = { id: endpoint.id, organization_slug: organizationSlug };
  const failed = update.isError
    ? { error: update.error, title: 'Could not save the endpoint' }
    : remove.isError
      ? { error: remove.error, title: 'Could not delete the endpoint' }
      : rotate.isError
        ? { error: rotate.error, title: 'Could not rotate the secret' }
        : test.isError
          ? { error: test.error, title: 'Could not send the test event' }
          : undefined;

  return (
    <>
      <tr data-testid="webhook-row" data-endpoint-id={endpoint.id} data-enabled={String(endpoint.enabled)}>
        <td>
          <code data-testid="webhook-url" style={{ wordBreak: 'break-all' }}>
            {endpoint.url}
          </code>
          {endpoint.description && (
            <div className="muted" data-testid="webhook-description">
              {endpoint.description}
            </div>
          )}
          <div className="muted">
            <code>{endpoint.id}</code>
          </div>
        </td>
        <td data-testid="webhook-event-types">
          {endpoint.eventTypes.map((type) => (
            <code key={type} style={{ marginRight: 4, display: 'inline-block' }}>
              {type}
            </code>
          ))}
        </td>
        <td>
          <StatusPill endpoint={endpoint} />
        </td>
        <td>
          {endpoint.secretRotatedAt ? (
            <span title={endpoint.secretRotatedAt}>rotated {new Date(endpoint.secretRotatedAt).toLocaleDateString()}</span>
          ) : (
            <span className="muted">since creation</span>
          )}
          {endpoint.previousSecretExpiresAt && (
            <div className="muted" data-testid="webhook-grace">
              old secret also signs until {new Date(endpoint.previousSecretExpiresAt).toLocaleString()}
            </div>
          )}
        </td>
        <td>
          <div style={{ display: 'flex', gap: 8, flexWrap: 'wrap' }}>
            <button type="button" className="button" onClick={() => setEditing((v) => !v)} data-testid="webhook-edit">
              Edit
            </button>
            <button
              type="button"
              className="button"
              disabled={test.isPending || !endpoint.enabled}
              title={endpoint.enabled ? undefined : 'Enable the endpoint to send a test'}
              onClick={() => test.mutate(ref)}
              data-testid="webhook-test"
            >
              {test.isPending ? 'Sending…' : 'Send test'}
            </button>
            {endpoint.enabled ? (
              <ConfirmButton
                question={`Disable the endpoint ${endpoint.url}?`}
                consequence="No new events are delivered to it until you enable it again; deliveries already queued fail."
                confirmLabel="Disable"
                disabled={update.isPending}
                onConfirm={() => update.mutateAsync({ ...ref, enabled: false }).catch(() => undefined)}
                testId="webhook-disable"
              >
                Disable
              </ConfirmButton>
            ) : (
              <button
                type="button"
                className="button"
                disabled={update.isPending}
                onClick={() => update.mutate({ ...ref, enabled: true })}
                data-testid="webhook-enable"
              >
                Enable
              </button>
            )}
            <ConfirmButton
              question={`Rotate the signing secret of ${endpoint.url}?`}
              consequence="A new secret is shown once. During the grace period deliveries carry signatures made with both secrets, so switch your receiver to the new one before it ends."
              confirmLabel="Rotate"
              disabled={rotate.isPending}
              onConfirm={async () => {
                const rotated = await rotate.mutateAsync(ref).catch(() => undefined);
                if (rotated) {
                  await onRotated(rotated);
                }
              }}
              testId="webhook-rotate"
            >
              Rotate secret
            </ConfirmButton>
            <ConfirmButton
              question={`Delete the endpoint ${endpoint.url}?`}
              consequence="Its deliveries and their history are deleted with it. This cannot be undone."
              confirmLabel="Delete"
              disabled={remove.isPending}
              onConfirm={() => remove.mutateAsync(ref).catch(() => undefined)}
              testId="webhook-delete"
            >
              Delete
            </ConfirmButton>
            <button
              type="button"
              className="button"
              disabled={!endpoint.enabled}
              title={endpoint.enabled ? undefined : 'Enable the endpoint to replay events to it'}
              onClick={() => setReplaying((v) => !v)}
              data-testid="webhook-replay"
            >
              Replay events
            </button>
            <Link className="button" to={`/webhook-deliveries?endpoint_id=${endpoint.id}`} data-testid="webhook-deliveries">
              Deliveries
            </Link>
          </div>
          {test.data && (
            <p className="muted" data-testid="webhook-test-queued">
              Test event queued:{' '}
              <Link
                to={`/webhook-deliveries?endpoint_id=${endpoint.id}&delivery=${test.data.delivery.id}`}
                data-testid="webhook-test-delivery"
              >
                {test.data.delivery.id}
              </Link>
            </p>
          )}
        </td>
      </tr>
      {editing && (
        <tr data-testid="webhook-edit-row">
          <td colSpan={5}>
            <WebhookEndpointForm
              mode="edit"
              pending={update.isPending}
              defaultValues={{ url: endpoint.url, eventTypes: endpoint.eventTypes, description: endpoint.description ?? '' }}
              onCancel={() => setEditing(false)}
              onSubmit={async (values) => {
                const saved = await update.mutateAsync({ ...ref, ...values }).catch(() => undefined);
                if (saved) {
                  setEditing(false);
                }
                return saved !== undefined;
              }}
            />
          </td>
        </tr>
      )}
      {replaying && (
        <tr data-testid="webhook-replay-row">
          <td colSpan={5}>
            <WebhookReplayForm endpoint={endpoint} organizationSlug={organizationSlug} onClose={() => setReplaying(false)} />
          </td>
        </tr>
      )}
      {failed && (
        <tr>
          <td colSpan={5}>
            <ErrorPanel error={failed.error} title={failed.title} />
          </td>
        </tr>
      )}
    </>
  );
}

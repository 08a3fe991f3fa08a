import { type TConnectedApp, type TThirdPartyAccess, type TThirdPartyMode, ZThirdPartyClientPattern } from '@svc/contracts/connected-apps';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { toast } from 'sonner';
import { ConfirmDialog } from '../../components/confirm-dialog.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Field } from '../../components/field.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { Select, type SelectOption } from '../../components/select.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const MODE_OPTIONS: SelectOption<TThirdPartyMode>[] = [
  { value: 'any', label: 'Any app or agent (each person still allows it)' },
  { value: 'listed', label: 'Only the apps listed below' },
  { value: 'off', label: 'None' },
];

/**
 * Organization settings -> Third-party access (docs/oidc.md "Which third parties an organization
 * allows"): which third-party apps and AI agents may act for the organization's people.
 */
export function ThirdPartyAccessPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const organization = active.organization;
  const access = useQuery(
    trpc.connectedApps.getThirdPartyAccess.queryOptions({ organization_slug: organization?.slug }, { enabled: organization !== null }),
  );
  return (
    <div data-testid="page-third-party-access">
      <PageHeader
        title="Third-party access"
        description="Which third-party apps and AI agents may act for your organization's people, once each person allows them."
      />
      {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
      {access.isError && (
        <ErrorPanel error={access.error} title="Could not load third-party access" onRetry={() => void access.refetch()} />
      )}
      {(active.isLoading || access.isPending) && !access.isError && organization !== null && (
        <Skeleton label="Loading third-party access…" testId="third-party-loading" />
      )}
      {access.data && organization && (
        <div className="detail-stack">
          <AccessForm key={access.data.updatedAt ?? 'default'} access={access.data} slug={organization.slug} />
          <ConnectedApps slug={organization.slug} />
        </div>
      )}
    </div>
  );
}

/** What the organization's people allowed third-party apps and agents, each revocable. */
function ConnectedApps({ slug }: { slug: string }) {
  const trpc = useTRPC();
  const apps = useQuery(trpc.connectedApps.list.queryOptions({ organization_slug: slug }));
  return (
    <section className="panel" data-testid="connected-apps">
      <h2 className="panel__title">Connected apps</h2>
      {apps.isError && <ErrorPanel error={apps.error} title="Could not load the connected apps" onRetry={() => void apps.refetch()} />}
      {apps.isPending && <Skeleton label="Loading the connected apps…" testId="connected-apps-loading" />}
      {apps.data && apps.data.data.length === 0 && (
        <p className="muted" data-testid="connected-apps-empty">
          No one in your organization has allowed a third-party app or agent yet.
        </p>
      )}
      {apps.data && apps.data.data.length > 0 && (
        <div className="detail-stack">
          {apps.data.data.map((app) => (
            <ConnectedAppRow key={app.id} app={app} slug={slug} />
          ))}
        </div>
      )}
    </section>
  );
}

function ConnectedAppRow({ app, slug }: { app: TConnectedApp; slug: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [revoking, setRevoking] = useState(false);
  const revoke = useMutation(
    trpc.connectedApps.revoke.mutationOptions({
      onSuccess: async () => {
        toast.success(`${app.clientHost} revoked`);
        await queryClient.invalidateQueries({ queryKey: trpc.connectedApps.list.pathKey() });
      },
    }),
  );
  const permissions = Object.values(app.permissions).flat();
  return (
    <div data-testid="connected-app" data-client-id={app.clientId}>
      <dl className="facts">
        <dt>App</dt>
        <dd>
          <strong data-testid="connected-app-host">{app.clientHost}</strong>{' '}
          <span className="muted" title={app.clientId}>
            {app.clientId}
          </span>
        </dd>
        <dt>Allowed by</dt>
        <dd data-testid="connected-app-user">{app.user.email ?? app.user.id}</dd>
        <dt>Permissions</dt>
        <dd data-testid="connected-app-permissions">{permissions.length > 0 ? permissions.join(', ') : '—'}</dd>
        <dt>Allowed</dt>
        <dd>
          <When at={app.grantedAt} empty="—" />
        </dd>
        <dt>Last used</dt>
        <dd data-testid="connected-app-last-used">
          <When at={app.lastUsedAt} empty="Not used yet" />
        </dd>
      </dl>
      <div className="panel__actions" style={{ marginTop: 12 }}>
        <button type="button" className="button button--danger" data-testid="connected-app-revoke" onClick={() => setRevoking(true)}>
          Revoke
        </button>
      </div>
      <ConfirmDialog
        open={revoking}
        onOpenChange={setRevoking}
        title={`Revoke ${app.clientHost}?`}
        consequence="Its refresh tokens stop at once; its access tokens end within ten minutes. It has to ask the person again."
        confirmLabel="Revoke"
        testId="connected-app-revoke-dialog"
        onConfirm={() => revoke.mutateAsync({ id: app.id, organization_slug: slug })}
      />
    </div>
  );
}

/** The mode and the list, saved together with one button. */
function AccessForm({ access, slug }: { access: TThirdPartyAccess; slug: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [mode, setMode] = useState<TThirdPartyMode>(access.mode);
  const [text, setText] = useState(access.clients.join('\n'));
  const clients = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const invalid = clients.filter((c) => !ZThirdPartyClientPattern.safeParse(c).success);
  const save = useMutation(
    trpc.connectedApps.setThirdPartyAccess.mutationOptions({
      onSuccess: async () => {
        toast.success('Third-party access saved');
        await queryClient.invalidateQueries({ queryKey: trpc.connectedApps.getThirdPartyAccess.pathKey() });
      },
    }),
  );
  const listError =
    mode !== 'listed'
      ? undefined
      : clients.length === 0
        ? 'List at least one app, or choose None.'
        : invalid.length > 0
          ? `Not an https client id or prefix ending in *: ${invalid[0]}`
          : undefined;
  return (
    <section className="panel" data-testid="third-party-access">
      <h2 className="panel__title">Who may connect</h2>
      <p className="muted">
        Apps and agents identify themselves by an https URL (their client id). Changing this stops the refresh tokens of apps it no longer
        allows at once.
      </p>
      <div className="form-grid">
        <Field label="Third-party apps and agents" id="third-party-mode" testId="third-party-mode-field">
          {(control) => <Select {...control} value={mode} options={MODE_OPTIONS} onValueChange={setMode} testId="third-party-mode" />}
        </Field>
        {mode === 'listed' && (
          <Field
            label="Allowed apps, one per line: a client id, or a URL prefix ending in *"
            id="third-party-clients"
            error={listError}
            testId="third-party-clients-field"
          >
            {(control) => (
              <textarea
                {...control}
                rows={5}
                spellCheck={false}
                placeholder="https://agents.example.com/*"
                value={text}
                onChange={(event) => setText(event.target.value)}
                data-testid="third-party-clients"
              />
            )}
          </Field>
        )}
      </div>
      {save.error && <ErrorPanel error={save.error} title="Could not save third-party access" />}
      <div className="panel__actions" style={{ marginTop: 16 }}>
        <button
          type="button"
          className="button button--primary"
          disabled={save.isPending || listError !== undefined}
          data-testid="third-party-save"
          onClick={() => save.mutate({ organization_slug: slug, mode, ...(mode === 'listed' ? { clients } : {}) })}
        >
          {save.isPending ? 'Saving…' : 'Save'}
        </button>
        <span className="muted">
          {access.updatedAt ? (
            <>
              Last changed <When at={access.updatedAt} empty="—" />
            </>
          ) : (
            'Never changed: any app or agent may ask.'
          )}
        </span>
      </div>
    </section>
  );
}

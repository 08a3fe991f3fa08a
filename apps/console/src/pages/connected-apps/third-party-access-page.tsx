import { type TThirdPartyAccess, type TThirdPartyMode, ZThirdPartyClientPattern } from '@svc/contracts/connected-apps';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { toast } from 'sonner';
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
      {access.data && organization && <AccessForm key={access.data.updatedAt ?? 'default'} access={access.data} slug={organization.slug} />}
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

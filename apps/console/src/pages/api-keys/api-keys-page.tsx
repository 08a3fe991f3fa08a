import type { TApiKey, TApiKeyWithSecret } from '@svc/contracts/api-keys';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { focusField } from '../../components/empty-state.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { SecretOnce } from '../../components/secret-once.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';
import { CreateApiKeyForm, NAME_FIELD_ID } from './create-api-key-form.tsx';

const PAGE_SIZE = 50;

/** A secret the api has just returned: on screen until the page is left, never fetched again. */
type Revealed = { title: string; keyId: string; secretKey: string };

/** Tenant API keys of the active organization: list, create (secret once), rotate, revoke. */
export function ApiKeysPage() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const active = useActiveOrganization();
  const pager = usePager();
  const [revealed, setRevealed] = useState<Revealed | null>(null);
  const organizationId = active.organization?.id;
  const keys = useQuery({
    ...trpc.apiKeys.list.queryOptions(
      { id: organizationId ?? '', limit: PAGE_SIZE, cursor: pager.cursor },
      { enabled: organizationId !== undefined },
    ),
    placeholderData: keepPreviousData,
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.apiKeys.list.pathKey() });
  const reveal = async (title: string, created: TApiKeyWithSecret) => {
    setRevealed({ title, keyId: created.apiKey.id, secretKey: created.secretKey });
    // The new key is the newest: show the first page.
    pager.reset();
    await refresh();
  };

  return (
    <div data-testid="page-api-keys">
      <PageHeader
        title="API keys"
        description={`Keys for backend services calling svc on behalf of ${active.organization ? active.organization.name : 'this workspace'}.`}
      />
      <p className="muted" data-testid="api-keys-creator-rule">
        A key never does more than the person who created it may do here, checked on every request: admin-only scopes work only while its
        creator is an org admin, a demoted creator's keys lose what the creator lost, and a key whose creator is suspended, removed from the
        organization or deleted stops working (401 invalid_secret_key). You can only give a key scopes you may use yourself.
      </p>
      <ListPage
        testId="api-keys"
        noun="API keys"
        title="Keys"
        workspace={active}
        query={keys}
        pager={pager}
        empty={{
          title: 'No API keys yet.',
          next: 'Create one above for a backend service; its secret is shown once.',
          action: { label: 'Create an API key', onClick: focusField(NAME_FIELD_ID) },
        }}
        above={(organization) => (
          <>
            {revealed && (
              <section className="panel" data-testid="api-key-revealed" data-key-id={revealed.keyId}>
                <h2 className="panel__title">{revealed.title}</h2>
                <SecretOnce label="Secret key" value={revealed.secretKey} testId="api-key-secret" />
                <button type="button" className="button" onClick={() => setRevealed(null)} data-testid="api-key-secret-dismiss">
                  I have stored it
                </button>
              </section>
            )}
            <CreateApiKeyForm
              organizationId={organization.id}
              onCreated={(created) => reveal(`Key ${created.apiKey.name} created`, created)}
            />
          </>
        )}
        columns={[
          'Name',
          'Key',
          'Scopes',
          'Status',
          'Created',
          { label: 'Last used', title: 'Recorded within about a minute of use' },
          'Expires',
          'Actions',
        ]}
        rowKey={(key) => key.id}
        row={(key) => <ApiKeyRow apiKey={key} onRotated={(rotated) => reveal(`New secret for ${rotated.apiKey.name}`, rotated)} />}
      />
    </div>
  );
}

function When({ at, empty }: { at: string | null; empty: string }) {
  return at ? (
    <time dateTime={at} title={at}>
      {new Date(at).toLocaleString()}
    </time>
  ) : (
    <span className="muted">{empty}</span>
  );
}

function ApiKeyRow({ apiKey, onRotated }: { apiKey: TApiKey; onRotated: (rotated: TApiKeyWithSecret) => Promise<void> }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const rotate = useMutation(trpc.apiKeys.rotate.mutationOptions());
  const revoke = useMutation(
    trpc.apiKeys.revoke.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.apiKeys.list.pathKey() }),
    }),
  );
  const live = apiKey.status === 'active';
  return (
    <>
      <tr data-testid="api-key-row" data-key-id={apiKey.id} data-status={apiKey.status}>
        <td data-testid="api-key-name">{apiKey.name}</td>
        <td style={{ whiteSpace: 'nowrap' }}>
          <code data-testid="api-key-prefix">{apiKey.secretPrefix}…</code>
        </td>
        <td data-testid="api-key-scopes">
          {apiKey.scopes.map((scope) => (
            <code key={scope} style={{ marginRight: 4, display: 'inline-block' }}>
              {scope}
            </code>
          ))}
        </td>
        <td>
          <span className={`pill ${live ? 'pill--on' : 'pill--off'}`} data-testid="api-key-status">
            {apiKey.status}
          </span>
          {apiKey.rotatedAt && (
            <div className="muted" title={apiKey.rotatedAt}>
              rotated {new Date(apiKey.rotatedAt).toLocaleDateString()}
            </div>
          )}
        </td>
        <td>
          <When at={apiKey.createdAt} empty="" />
        </td>
        <td data-testid="api-key-last-used">
          <When at={apiKey.lastUsedAt} empty="never" />
        </td>
        <td>
          <When at={apiKey.revokedAt ? null : apiKey.expiresAt} empty={apiKey.revokedAt ? '—' : 'never'} />
        </td>
        <td style={{ whiteSpace: 'nowrap' }}>
          {live ? (
            <div style={{ display: 'flex', gap: 8 }}>
              <ConfirmButton
                question={`Rotate the key ${apiKey.name}?`}
                consequence="A new secret is shown once; the current secret stops working at once, so update every service that uses it."
                confirmLabel="Rotate"
                disabled={rotate.isPending}
                onConfirm={async () => {
                  const rotated = await rotate.mutateAsync({ id: apiKey.id }).catch(() => undefined);
                  if (rotated) {
                    await onRotated(rotated);
                  }
                }}
                testId="api-key-rotate"
              >
                Rotate
              </ConfirmButton>
              <ConfirmButton
                question={`Revoke the key ${apiKey.name}?`}
                consequence="Every request with it is refused from now on. This cannot be undone."
                confirmLabel="Revoke"
                disabled={revoke.isPending}
                onConfirm={() => revoke.mutateAsync({ id: apiKey.id }).catch(() => undefined)}
                testId="api-key-revoke"
              >
                Revoke
              </ConfirmButton>
            </div>
          ) : (
            <span className="muted">—</span>
          )}
        </td>
      </tr>
      {(rotate.isError || revoke.isError) && (
        <tr>
          <td colSpan={8}>
            <ErrorPanel
              error={rotate.error ?? revoke.error}
              title={rotate.isError ? 'Could not rotate the key' : 'Could not revoke the key'}
            />
          </td>
        </tr>
      )}
    </>
  );
}

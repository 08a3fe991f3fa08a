import type { TApiKey, TApiKeyWithSecret } from '@svc/contracts/api-keys';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { Chips } from '../../components/chips.tsx';
import { actionsColumn, columnHelper, whenColumn } from '../../components/data-table.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { SecretOnceDialog } from '../../components/secret-once.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';
import { CreateApiKeyDialog } from './create-api-key-dialog.tsx';

const PAGE_SIZE = 50;

/** A key's own page. */
function apiKeyPath(id: string): string {
  return `/api-keys/${encodeURIComponent(id)}`;
}

/** A secret the api has just returned: in its dialog until dismissed, never fetched again. */
type Revealed = { title: string; keyId: string; secretKey: string };

/**
 * The list's columns, sized to fit the panel at 1280 px: the name takes what the sized columns
 * leave; ids are Identifiers (the key id cut in the middle, whole on hover and when copied);
 * times are relative, exact on hover.
 */
function apiKeyColumns(onRotated: (rotated: TApiKeyWithSecret) => Promise<void>) {
  const column = columnHelper<TApiKey>();
  return column.columns([
    column.accessor('name', {
      header: 'Name',
      sortFn: 'text',
      // The list is newest first; when each was made is on hover.
      // The name opens the key's own page.
      cell: (info) => (
        <Link
          to={apiKeyPath(info.row.original.id)}
          data-testid="api-key-name"
          title={`${info.getValue()}, created ${new Date(info.row.original.createdAt).toLocaleString()}`}
        >
          {info.getValue()}
        </Link>
      ),
    }),
    column.accessor('secretPrefix', {
      header: 'Key',
      enableSorting: false,
      meta: { width: '9.5rem', description: 'The first characters of the secret: enough to tell keys apart' },
      // A partial secret: shown whole, nothing to copy.
      cell: (info) => <Identifier value={info.getValue()} label="key prefix" copy={false} testId="api-key-prefix" />,
    }),
    column.accessor('id', {
      header: 'ID',
      enableSorting: false,
      meta: { width: '9.5rem' },
      cell: (info) => <Identifier value={info.getValue()} label="API key id" testId="api-key-id" />,
    }),
    column.accessor((key) => key.scopes.join(' '), {
      id: 'scopes',
      header: 'Scopes',
      enableSorting: false,
      meta: { width: '9.5rem' },
      cell: (info) => <Chips names={info.row.original.scopes} testId="api-key-scopes" />,
    }),
    column.accessor('status', {
      header: 'Status',
      sortFn: 'text',
      meta: { width: '7.5rem' },
      cell: (info) => {
        const key = info.row.original;
        return (
          <span
            className={`pill ${key.status === 'active' ? 'pill--on' : 'pill--off'}`}
            data-testid="api-key-status"
            title={key.rotatedAt ? `Rotated ${key.rotatedAt}` : undefined}
          >
            {key.status}
          </span>
        );
      },
    }),
    whenColumn(column, 'lastUsedAt', 'Last used', {
      description: 'Recorded within about a minute of use',
      empty: 'never',
      testId: 'api-key-last-used',
    }),
    // A revoked key's expiry no longer matters.
    whenColumn(column, 'expiresAt', 'Expires', {
      // "in 11 months" whole.
      width: '9rem',
      empty: (key) => (key.revokedAt ? '—' : 'never'),
      shown: (key, at) => (key.revokedAt ? null : at),
      testId: 'api-key-expires',
    }),
    actionsColumn(column, (apiKey) => <ApiKeyActions apiKey={apiKey} onRotated={onRotated} />),
  ]);
}

/** Tenant API keys of the active organization: list, create (secret once), rotate, revoke. */
export function ApiKeysPage() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const active = useActiveOrganization();
  const pager = usePager();
  const [creating, setCreating] = useState(false);
  const [revealed, setRevealed] = useState<Revealed | null>(null);
  const organization = active.organization;
  const keys = useQuery({
    ...trpc.apiKeys.list.queryOptions(
      { id: organization?.id ?? '', limit: PAGE_SIZE, cursor: pager.cursor },
      { enabled: organization !== null },
    ),
    placeholderData: keepPreviousData,
  });
  const reveal = async (title: string, withSecret: TApiKeyWithSecret) => {
    setRevealed({ title, keyId: withSecret.apiKey.id, secretKey: withSecret.secretKey });
    // The new key is the newest: show the first page.
    pager.reset();
    await Promise.all([
      queryClient.invalidateQueries({ queryKey: trpc.apiKeys.list.pathKey() }),
      queryClient.invalidateQueries({ queryKey: trpc.apiKeys.get.pathKey() }),
    ]);
  };
  // One definition for the page's lifetime: `reveal` only reads state setters and the query client.
  const onRotated = (rotated: TApiKeyWithSecret) => reveal(`New secret for ${rotated.apiKey.name}`, rotated);
  const [columns] = useState(() => apiKeyColumns(onRotated));
  const selected = useParams().id ?? null;

  return (
    <div data-testid="page-api-keys">
      <PageHeader
        title="API keys"
        description={`Keys for backend services calling svc on behalf of ${organization ? organization.name : 'this workspace'}.`}
        actions={
          organization && (
            <CreateApiKeyDialog
              organizationId={organization.id}
              open={creating}
              onOpenChange={setCreating}
              onCreated={(created) => reveal(`Key ${created.apiKey.name} created`, created)}
            />
          )
        }
      />
      <p className="muted" data-testid="api-keys-creator-rule">
        A key never does more than the person who created it may do here, checked on every request: admin-only scopes work only while its
        creator is an org admin, a demoted creator's keys lose what the creator lost, and a key whose creator is suspended, removed from the
        organization or deleted stops working (401 invalid_secret_key). You can only give a key scopes you may use yourself.
      </p>
      <SecretOnceDialog
        revealed={revealed && { title: revealed.title, value: revealed.secretKey }}
        onDismiss={() => setRevealed(null)}
        description="Store the secret where the service reads it now: this is the only time svc shows it."
        label="Secret key"
        bodyAttributes={revealed ? { 'data-key-id': revealed.keyId } : undefined}
        testId="api-key-revealed"
        secretTestId="api-key-secret"
      />
      {selected ? (
        <ApiKeyDetail id={selected} onRotated={onRotated} />
      ) : (
        <ListPage
          testId="api-keys"
          noun="API keys"
          title="Keys"
          workspace={active}
          query={keys}
          pager={pager}
          empty={{
            title: 'No API keys yet.',
            next: 'Create one for a backend service; its secret is shown once.',
            action: { label: 'Create API key', onClick: () => setCreating(true) },
          }}
          rowKey={(key) => key.id}
          table={{
            columns,
            rowAttributes: (key) => ({ 'data-testid': 'api-key-row', 'data-key-id': key.id, 'data-status': key.status }),
            minWidth: '66rem',
          }}
        />
      )}
    </div>
  );
}

/**
 * One key on its own page (/api-keys/<id>): its scopes in full, prefix, status and times, who
 * created it, and the same menu as its row. The secret is never shown again.
 */
function ApiKeyDetail({ id, onRotated }: { id: string; onRotated: (rotated: TApiKeyWithSecret) => Promise<void> }) {
  const trpc = useTRPC();
  const apiKey = useQuery(trpc.apiKeys.get.queryOptions({ id }));
  const data = apiKey.data;
  return (
    <>
      <p className="breadcrumb">
        <Link to="/api-keys" data-testid="api-key-detail-back">
          ← API keys
        </Link>
      </p>
      {apiKey.isError && <ErrorPanel error={apiKey.error} title="Could not load the API key" onRetry={() => void apiKey.refetch()} />}
      {apiKey.isPending && <Skeleton label="Loading the API key…" testId="api-key-detail-loading" />}
      {data && (
        <section className="panel" data-testid="api-key-detail" data-key-id={data.id} data-status={data.status}>
          <div className="panel__header">
            <h2 className="panel__title">{data.name}</h2>
            <div className="panel__actions">
              <ApiKeyActions apiKey={data} onRotated={onRotated} />
            </div>
          </div>
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <span className={`pill ${data.status === 'active' ? 'pill--on' : 'pill--off'}`} data-testid="api-key-detail-status">
                {data.status}
              </span>
            </dd>
            <dt>Key ID</dt>
            <dd>
              <Identifier value={data.id} label="API key id" testId="api-key-detail-id" />
            </dd>
            <dt>Secret starts with</dt>
            <dd>
              <Identifier value={data.secretPrefix} label="key prefix" copy={false} testId="api-key-detail-prefix" />
            </dd>
            <dt>Scopes</dt>
            <dd>
              <span className="chip-list" data-testid="api-key-detail-scopes">
                {data.scopes.map((scope) => (
                  <code key={scope}>{scope}</code>
                ))}
              </span>
            </dd>
            <dt>Created</dt>
            <dd>
              <When at={data.createdAt} empty="—" />
              {data.createdBy && (
                <>
                  {' '}
                  <span className="muted">by</span> <Identifier value={data.createdBy} label="creator's user id" />
                </>
              )}
            </dd>
            <dt>Last used</dt>
            <dd>
              <When at={data.lastUsedAt} empty="never" />
            </dd>
            <dt>Expires</dt>
            <dd>
              <When at={data.expiresAt} empty="never" />
            </dd>
            {data.rotatedAt && (
              <>
                <dt>Rotated</dt>
                <dd>
                  <When at={data.rotatedAt} empty="—" />
                </dd>
              </>
            )}
            {data.revokedAt && (
              <>
                <dt>Revoked</dt>
                <dd>
                  <When at={data.revokedAt} empty="—" />
                </dd>
              </>
            )}
          </dl>
        </section>
      )}
    </>
  );
}

/** The row's "⋯" menu: Rotate…, then (separated) Revoke key…, each confirmed; only for live keys. */
function ApiKeyActions({ apiKey, onRotated }: { apiKey: TApiKey; onRotated: (rotated: TApiKeyWithSecret) => Promise<void> }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const rotate = useMutation(trpc.apiKeys.rotate.mutationOptions());
  const revoke = useMutation(
    trpc.apiKeys.revoke.mutationOptions({
      onSuccess: () =>
        Promise.all([
          queryClient.invalidateQueries({ queryKey: trpc.apiKeys.list.pathKey() }),
          queryClient.invalidateQueries({ queryKey: trpc.apiKeys.get.pathKey() }),
        ]),
    }),
  );
  if (apiKey.status !== 'active') {
    return null;
  }
  return (
    <RowActions
      name={apiKey.name}
      testId="api-key-actions"
      actions={[
        {
          label: 'Rotate…',
          testId: 'api-key-rotate',
          confirm: {
            title: `Rotate the key ${apiKey.name}?`,
            consequence: 'A new secret is shown once; the current secret stops working at once, so update every service that uses it.',
            confirmLabel: 'Rotate key',
            tone: 'primary',
            testId: 'api-key-rotate-dialog',
            onConfirm: async () => onRotated(await rotate.mutateAsync({ id: apiKey.id })),
          },
        },
        {
          label: 'Revoke key…',
          testId: 'api-key-revoke',
          destructive: true,
          confirm: {
            title: `Revoke the key ${apiKey.name}?`,
            consequence: 'Every request with it is refused from now on. This cannot be undone.',
            confirmLabel: 'Revoke key',
            typeToConfirm: apiKey.name,
            testId: 'api-key-revoke-dialog',
            onConfirm: () => revoke.mutateAsync({ id: apiKey.id }),
          },
        },
      ]}
    />
  );
}

import { zodResolver } from '@hookform/resolvers/zod';
import { type TApiKeyWithSecret, ZCreateApiKeyBody } from '@svc/contracts/api-keys';
import { PERMISSION_CATALOG } from '@svc/contracts/permissions';
import { useMutation } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { useTRPC } from '../../trpc.ts';

/** `<input type="date">` gives a local calendar day: the key lasts to the end of it. */
function endOfLocalDay(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') {
    return undefined;
  }
  const at = new Date(`${value}T23:59:59.999`);
  return Number.isNaN(at.getTime()) ? value : at.toISOString();
}

/** The name field's id: the empty list's button takes the admin here. */
export const NAME_FIELD_ID = 'api-key-name';

type Props = {
  organizationId: string;
  /** Called with the created key and its secret (shown once by the page). */
  onCreated: (created: TApiKeyWithSecret) => void | Promise<void>;
};

/** Name, scopes from the permission catalog (checkboxes), optional expiry: the contracts body schema. */
export function CreateApiKeyForm({ organizationId, onCreated }: Props) {
  const trpc = useTRPC();
  const form = useForm({
    resolver: zodResolver(ZCreateApiKeyBody),
    defaultValues: { name: '', scopes: [] },
  });
  const errors = form.formState.errors;
  const create = useMutation(trpc.apiKeys.create.mutationOptions());
  const submit = form.handleSubmit(async (values) => {
    const created = await create.mutateAsync({ id: organizationId, ...values }).catch(() => undefined);
    if (created) {
      form.reset({ name: '', scopes: [] });
      await onCreated(created);
    }
  });

  return (
    <section className="panel" data-testid="api-key-create-panel">
      <h2 className="panel__title">New API key</h2>
      <p className="muted">
        A key acts on this organization only, with the scopes you tick (never more than you hold yourself). Send it as{' '}
        <code>Authorization: Bearer sk_live_…</code> from a server; never ship it to a browser.
      </p>
      <form onSubmit={submit} noValidate data-testid="api-key-form">
        <div className="form-row">
          <label className="form-field">
            <span>Name</span>
            <input id={NAME_FIELD_ID} placeholder="CI deploy" data-testid="api-key-name-input" {...form.register('name')} />
            {errors.name && (
              <span className="form-field__error" data-testid="api-key-name-error">
                {errors.name.message}
              </span>
            )}
          </label>
          <label className="form-field">
            <span>Expires (optional)</span>
            <input type="date" data-testid="api-key-expires-input" {...form.register('expiresAt', { setValueAs: endOfLocalDay })} />
            {errors.expiresAt && (
              <span className="form-field__error" data-testid="api-key-expires-error">
                {errors.expiresAt.message}
              </span>
            )}
          </label>
        </div>
        <fieldset style={{ border: '1px solid var(--border)', borderRadius: 8, padding: '8px 12px' }} data-testid="api-key-scopes">
          <legend>Scopes</legend>
          <div style={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fill, minmax(260px, 1fr))', gap: '4px 16px' }}>
            {PERMISSION_CATALOG.map((permission) => (
              <label key={permission.name} style={{ display: 'flex', gap: 8, alignItems: 'baseline' }}>
                <input
                  type="checkbox"
                  value={permission.name}
                  data-testid={`api-key-scope-${permission.name}`}
                  {...form.register('scopes')}
                />
                <span>
                  <code>{permission.name}</code> <span className="muted">{permission.description}</span>
                </span>
              </label>
            ))}
          </div>
          {errors.scopes && (
            <span className="form-field__error" data-testid="api-key-scopes-error">
              {errors.scopes.message ?? 'choose scopes from the list'}
            </span>
          )}
        </fieldset>
        <div className="form-row">
          <button type="submit" className="button button--primary" disabled={create.isPending} data-testid="api-key-create">
            {create.isPending ? 'Creating…' : 'Create key'}
          </button>
        </div>
      </form>
      {create.isError && <ErrorPanel error={create.error} title="Could not create the key" />}
    </section>
  );
}

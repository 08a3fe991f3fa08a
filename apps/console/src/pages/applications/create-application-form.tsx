import { zodResolver } from '@hookform/resolvers/zod';
import { type TApplicationWithSecret, ZCreateApplicationForm } from '@svc/contracts/applications';
import { useMutation } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { useTRPC } from '../../trpc.ts';

/** The name field's id: the empty list's button takes the admin here. */
export const NAME_FIELD_ID = 'application-name';

type Props = {
  organizationSlug: string;
  /** Called with the application and its secret key (shown once by the page). */
  onCreated: (created: TApplicationWithSecret) => void | Promise<void>;
};

/** Name, optional slug and logo; allowlists and the OAuth provider are edited on the application. */
export function CreateApplicationForm({ organizationSlug, onCreated }: Props) {
  const trpc = useTRPC();
  const form = useForm({ resolver: zodResolver(ZCreateApplicationForm), defaultValues: { name: '', slug: '', logoUrl: '' } });
  const errors = form.formState.errors;
  const create = useMutation(trpc.applications.create.mutationOptions());
  const submit = form.handleSubmit(async (values) => {
    const created = await create.mutateAsync({ organization_slug: organizationSlug, ...values }).catch(() => undefined);
    if (created) {
      form.reset({ name: '', slug: '', logoUrl: '' });
      await onCreated(created);
    }
  });

  return (
    <section className="panel" data-testid="application-create-panel">
      <h2 className="panel__title">New application</h2>
      <p className="muted">
        You get a publishable key for browsers and a secret key for your backend. The secret key is shown once: copy it before you leave the
        page.
      </p>
      <form onSubmit={submit} noValidate data-testid="application-form">
        <div className="form-row">
          <label className="form-field">
            <span>Name</span>
            <input id={NAME_FIELD_ID} placeholder="Web app" data-testid="application-name-input" {...form.register('name')} />
            {errors.name && (
              <span className="form-field__error" data-testid="application-name-error">
                {errors.name.message}
              </span>
            )}
          </label>
          <label className="form-field">
            <span>Slug (optional)</span>
            <input placeholder="from the name" data-testid="application-slug-input" {...form.register('slug')} />
            {errors.slug && (
              <span className="form-field__error" data-testid="application-slug-error">
                {errors.slug.message}
              </span>
            )}
          </label>
          <label className="form-field">
            <span>Logo URL (optional)</span>
            <input placeholder="https://cdn.example.com/logo.png" data-testid="application-logo-url-input" {...form.register('logoUrl')} />
            {errors.logoUrl && (
              <span className="form-field__error" data-testid="application-logo-url-error">
                {errors.logoUrl.message}
              </span>
            )}
          </label>
          <button type="submit" className="button button--primary" disabled={create.isPending} data-testid="application-create">
            {create.isPending ? 'Creating…' : 'Create application'}
          </button>
        </div>
      </form>
      {create.isError && <ErrorPanel error={create.error} title="Could not create the application" />}
    </section>
  );
}

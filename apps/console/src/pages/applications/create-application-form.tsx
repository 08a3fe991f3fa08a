import { zodResolver } from '@hookform/resolvers/zod';
import { type TApplicationWithSecret, ZCreateApplicationForm } from '@svc/contracts/applications';
import { useMutation } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { dialogMutation, FormDialog } from '../../components/dialog.tsx';
import { Field } from '../../components/field.tsx';
import { useTRPC } from '../../trpc.ts';

/** The name field's id: the dialog focuses it when it opens. */
export const NAME_FIELD_ID = 'application-name';

type Props = {
  organizationSlug: string;
  open: boolean;
  onOpenChange: (open: boolean) => void;
  /** Called with the application and its secret key after the dialog has closed (the page shows it once). */
  onCreated: (created: TApplicationWithSecret) => void | Promise<void>;
};

const EMPTY = { name: '', slug: '', logoUrl: '' };

/**
 * "Create application" (the page header's primary button) and its form: name, optional slug and
 * logo (https only, checked by the contracts form schema); allowlists and the OAuth provider are
 * edited on the application.
 */
export function CreateApplicationDialog({ organizationSlug, open, onOpenChange, onCreated }: Props) {
  const trpc = useTRPC();
  const form = useForm({ resolver: zodResolver(ZCreateApplicationForm), defaultValues: EMPTY });
  const errors = form.formState.errors;
  const create = useMutation(trpc.applications.create.mutationOptions());
  const { close, settle } = dialogMutation({ onOpenChange, forget: () => form.reset(EMPTY), mutation: create });
  const submit = form.handleSubmit(async (values) => {
    const created = await settle(create.mutateAsync({ organization_slug: organizationSlug, ...values }));
    if (created) {
      await onCreated(created);
    }
  });

  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={
        <button type="button" className="button button--primary" data-testid="application-create-open">
          Create application
        </button>
      }
      title="Create application"
      description="You get a publishable key for browsers and a secret key for your backend; the secret key is shown once."
      onSubmit={submit}
      submitLabel="Create application"
      pending={create.isPending}
      pendingLabel="Creating…"
      error={create.error}
      errorTitle="Could not create the application"
      testId="application-create"
    >
      <div className="form-grid">
        <Field label="Name" id={NAME_FIELD_ID} error={errors.name?.message} testId="application-name">
          {(control) => (
            <input {...control} placeholder="Web app" autoComplete="off" data-testid="application-name-input" {...form.register('name')} />
          )}
        </Field>
        <Field label="Slug (optional)" error={errors.slug?.message} hint="Derived from the name when empty." testId="application-slug">
          {(control) => <input {...control} autoComplete="off" data-testid="application-slug-input" {...form.register('slug')} />}
        </Field>
      </div>
      <Field
        label="Logo URL (optional)"
        error={errors.logoUrl?.message}
        hint="Shown on hosted sign-in: an https URL."
        testId="application-logo-url"
      >
        {(control) => (
          <input
            {...control}
            placeholder="https://cdn.example.com/logo.png"
            data-testid="application-logo-url-input"
            {...form.register('logoUrl')}
          />
        )}
      </Field>
    </FormDialog>
  );
}

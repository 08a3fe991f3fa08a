import { zodResolver } from '@hookform/resolvers/zod';
import { type TApplication, ZApplicationSettingsForm } from '@svc/contracts/applications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { toast } from 'sonner';
import { FormDialog } from '../../components/dialog.tsx';
import { Field } from '../../components/field.tsx';
import { Select, type SelectOption } from '../../components/select.tsx';
import { useTRPC } from '../../trpc.ts';

const CLIENT_TYPES: SelectOption<TApplication['clientType']>[] = [
  { value: 'confidential', label: 'confidential' },
  { value: 'public', label: 'public' },
];

const AUDIENCES: SelectOption<TApplication['signInAudience']>[] = [
  { value: 'anyone', label: 'anyone' },
  { value: 'members', label: 'members of this organization only' },
];

function formValues(application: TApplication) {
  return {
    name: application.name,
    logoUrl: application.logoUrl ?? '',
    redirectUrls: application.redirectUrls.join('\n'),
    allowedOrigins: application.allowedOrigins.join('\n'),
    postLogoutRedirectUrls: application.postLogoutRedirectUrls.join('\n'),
    backchannelLogoutUrl: application.backchannelLogoutUrl ?? '',
    clientType: application.clientType,
    signInAudience: application.signInAudience,
    productionProvider: application.oauth.productionProvider ?? '',
  };
}

type Props = {
  application: TApplication;
  organizationSlug: string;
  onClose: () => void;
};

/**
 * An application's settings in a FormDialog: name, logo (https only), the allowlists one URL a
 * line, client type, audience, back-channel logout and the production provider, checked with the
 * contracts form schema before anything is sent. The detail shows what was stored (normalized,
 * duplicates removed).
 */
export function ApplicationSettingsDialog({ application, organizationSlug, onClose }: Props) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const form = useForm({ resolver: zodResolver(ZApplicationSettingsForm), defaultValues: formValues(application) });
  const errors = form.formState.errors;
  const clientType = form.watch('clientType');
  const signInAudience = form.watch('signInAudience');
  const update = useMutation(
    trpc.applications.update.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.applications.pathKey() }),
    }),
  );
  const submit = form.handleSubmit(async (values) => {
    const saved = await update
      .mutateAsync({
        id: application.id,
        organization_slug: organizationSlug,
        name: values.name,
        logoUrl: values.logoUrl,
        redirectUrls: values.redirectUrls,
        allowedOrigins: values.allowedOrigins,
        postLogoutRedirectUrls: values.postLogoutRedirectUrls,
        backchannelLogoutUrl: values.backchannelLogoutUrl,
        clientType: values.clientType,
        signInAudience: values.signInAudience,
        oauth: { productionProvider: values.productionProvider },
      })
      .catch(() => undefined);
    if (saved) {
      toast.success(`Settings of ${saved.name} saved`);
      onClose();
    }
  });
  const lines = { rows: 4, spellCheck: false, className: 'textarea--mono' } as const;

  return (
    <FormDialog
      open
      onOpenChange={(next) => !next && onClose()}
      title={`Settings of ${application.name}`}
      description="Who may sign in to this application and where svc may send them back to."
      wide
      onSubmit={submit}
      submitLabel="Save settings"
      pending={update.isPending}
      error={update.error}
      errorTitle="Could not save the settings"
      testId="application-settings"
    >
      <div className="form-grid">
        <Field label="Name" error={errors.name?.message} testId="application-settings-name">
          {(control) => <input {...control} autoComplete="off" data-testid="application-settings-name" {...form.register('name')} />}
        </Field>
        <Field
          label="Logo URL"
          error={errors.logoUrl?.message}
          hint="Shown on hosted sign-in: an https URL. Empty: none."
          testId="application-logo-url"
        >
          {(control) => (
            <input
              {...control}
              placeholder="https://cdn.example.com/logo.png"
              data-testid="application-logo-url"
              {...form.register('logoUrl')}
            />
          )}
        </Field>
        <Field
          label="Client type"
          hint="Confidential: a server that keeps the secret key. Public: an SPA or native app (PKCE only)."
          error={errors.clientType?.message}
        >
          {(control) => (
            <Select
              {...control}
              value={clientType}
              options={CLIENT_TYPES}
              testId="application-client-type"
              onValueChange={(value) => form.setValue('clientType', value, { shouldDirty: true })}
            />
          )}
        </Field>
        <Field label="Who may sign in" error={errors.signInAudience?.message}>
          {(control) => (
            <Select
              {...control}
              value={signInAudience}
              options={AUDIENCES}
              testId="application-sign-in-audience"
              onValueChange={(value) => form.setValue('signInAudience', value, { shouldDirty: true })}
            />
          )}
        </Field>
      </div>
      <Field
        label="Redirect URLs (one per line)"
        hint={
          <>
            Where hosted sign-in may send users back to (exact match): https, http only for localhost and 127.0.0.1, no fragments; or paths
            on svc like <code>/user</code>. At most 50.
          </>
        }
        error={errors.redirectUrls?.message}
        testId="application-redirect-urls"
      >
        {(control) => <textarea {...control} {...lines} data-testid="application-redirect-urls" {...form.register('redirectUrls')} />}
      </Field>
      <Field
        label="Allowed origins (one per line)"
        hint={
          <>
            The origins your frontend runs on, exactly <code>https://app.example.com</code> (no path). At most 50.
          </>
        }
        error={errors.allowedOrigins?.message}
        testId="application-allowed-origins"
      >
        {(control) => <textarea {...control} {...lines} data-testid="application-allowed-origins" {...form.register('allowedOrigins')} />}
      </Field>
      <Field
        label="Post-logout redirect URLs (one per line)"
        hint="Where an OpenID Connect logout may send users back to (exact match): https, http only for localhost. At most 50."
        error={errors.postLogoutRedirectUrls?.message}
        testId="application-post-logout-urls"
      >
        {(control) => (
          <textarea {...control} {...lines} data-testid="application-post-logout-urls" {...form.register('postLogoutRedirectUrls')} />
        )}
      </Field>
      <div className="form-grid">
        <Field
          label="Back-channel logout URL"
          hint="svc POSTs a signed logout token here when a session ends. Empty: none."
          error={errors.backchannelLogoutUrl?.message}
          testId="application-backchannel-url"
        >
          {(control) => (
            <input
              {...control}
              placeholder="https://app.example.com/backchannel-logout"
              data-testid="application-backchannel-url"
              {...form.register('backchannelLogoutUrl')}
            />
          )}
        </Field>
        <Field
          label="Production OAuth provider"
          hint={
            <>
              With your own OAuth credentials (e.g. <code>google</code>). Empty: the shared development provider.
            </>
          }
          error={errors.productionProvider?.message}
          testId="application-production-provider"
        >
          {(control) => (
            <input
              {...control}
              placeholder="google"
              data-testid="application-production-provider"
              {...form.register('productionProvider')}
            />
          )}
        </Field>
      </div>
    </FormDialog>
  );
}

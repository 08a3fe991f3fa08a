import { zodResolver } from '@hookform/resolvers/zod';
import { type TApplication, ZMachineClientSettingsForm } from '@svc/contracts/applications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { toast } from 'sonner';
import { FormDialog } from '../../components/dialog.tsx';
import { Field } from '../../components/field.tsx';
import { useTRPC } from '../../trpc.ts';
import { MachineClientFields } from './machine-client-fields.tsx';

function formValues(application: TApplication) {
  return {
    name: application.name,
    logoUrl: application.logoUrl ?? '',
    tokenEndpointAuthMethod: application.tokenEndpointAuthMethod ?? 'client_secret_basic',
    jwks: application.jwks ? JSON.stringify(application.jwks, null, 2) : '',
    jwksUri: application.jwksUri ?? '',
    permissions: application.permissions,
  };
}

type Props = {
  application: TApplication;
  organizationSlug: string;
  onClose: () => void;
};

/**
 * A machine client's settings in a FormDialog: name, logo, how it authenticates at the token
 * endpoint, its public keys and its permissions. Its type stays machine; it has no redirect URLs,
 * origins or logout settings to edit. Switching to the secret key drops the keys.
 */
export function MachineSettingsDialog({ application, organizationSlug, onClose }: Props) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const form = useForm({ resolver: zodResolver(ZMachineClientSettingsForm), defaultValues: formValues(application) });
  const errors = form.formState.errors;
  const method = form.watch('tokenEndpointAuthMethod');
  const permissions = form.watch('permissions');
  const update = useMutation(
    trpc.applications.update.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.applications.pathKey() }),
    }),
  );
  const submit = form.handleSubmit(async (values) => {
    const keyed = values.tokenEndpointAuthMethod === 'private_key_jwt';
    const saved = await update
      .mutateAsync({
        id: application.id,
        organization_slug: organizationSlug,
        name: values.name,
        logoUrl: values.logoUrl,
        tokenEndpointAuthMethod: values.tokenEndpointAuthMethod,
        permissions: values.permissions,
        ...(keyed ? { jwks: values.jwks, jwksUri: values.jwksUri } : {}),
      })
      .catch(() => undefined);
    if (saved) {
      toast.success(`Settings of ${saved.name} saved`);
      onClose();
    }
  });

  return (
    <FormDialog
      open
      onOpenChange={(next) => !next && onClose()}
      title={`Settings of ${application.name}`}
      description="A machine client: how it authenticates at the token endpoint and what its tokens may carry."
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
        <Field label="Logo URL" error={errors.logoUrl?.message} hint="An https URL. Empty: none." testId="application-logo-url">
          {(control) => (
            <input
              {...control}
              placeholder="https://cdn.example.com/logo.png"
              data-testid="application-logo-url"
              {...form.register('logoUrl')}
            />
          )}
        </Field>
      </div>
      <MachineClientFields
        organizationSlug={organizationSlug}
        method={method}
        onMethodChange={(value) => form.setValue('tokenEndpointAuthMethod', value, { shouldDirty: true })}
        jwks={form.register('jwks')}
        jwksUri={form.register('jwksUri')}
        permissions={permissions}
        onPermissionsChange={(next) => form.setValue('permissions', next, { shouldDirty: true })}
        errors={{
          method: errors.tokenEndpointAuthMethod?.message,
          jwks: errors.jwks?.message,
          jwksUri: errors.jwksUri?.message,
          permissions: errors.permissions?.message,
        }}
        testId="application-settings-machine"
      />
    </FormDialog>
  );
}

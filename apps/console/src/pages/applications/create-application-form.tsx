import { zodResolver } from '@hookform/resolvers/zod';
import {
  CLIENT_TYPE_OF_KIND,
  type TApplicationKind,
  type TApplicationWithSecret,
  type TCreateApplicationRequest,
  ZCreateApplicationForm,
} from '@svc/contracts/applications';
import { useMutation } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import type { z } from 'zod';
import { dialogMutation, FormDialog } from '../../components/dialog.tsx';
import { Field } from '../../components/field.tsx';
import { Select, type SelectOption } from '../../components/select.tsx';
import { useTRPC } from '../../trpc.ts';
import { MachineClientFields } from './machine-client-fields.tsx';

/** The name field's id: the dialog focuses it when it opens. */
export const NAME_FIELD_ID = 'application-name';

type Props = {
  organizationSlug: string;
  open: boolean;
  onOpenChange: (open: boolean) => void;
  /** Called with the application and its secret key after the dialog has closed (the page shows it once). */
  onCreated: (created: TApplicationWithSecret) => void | Promise<void>;
};

const KINDS: SelectOption<TApplicationKind>[] = [
  { value: 'web', label: 'Web server app: pages rendered on a server that keeps the secret key' },
  { value: 'spa', label: 'Single-page app: runs in the browser (React, Vue…), PKCE' },
  { value: 'native', label: 'Native or mobile app: desktop, iOS, Android, a CLI, PKCE' },
  { value: 'machine', label: 'Machine: a backend job or partner, no person signs in' },
];

/** What the redirect URL field suggests for each kind that signs people in. */
const REDIRECT_PLACEHOLDER: Record<Exclude<TApplicationKind, 'machine'>, string> = {
  web: 'https://app.example.com/auth/callback',
  spa: 'http://localhost:5173/callback',
  native: 'http://127.0.0.1:8400/callback',
};

const EMPTY = {
  name: '',
  slug: '',
  logoUrl: '',
  kind: 'web' as TApplicationKind,
  redirectUrl: '',
  tokenEndpointAuthMethod: 'client_secret_basic' as const,
  jwks: '',
  jwksUri: '',
  permissions: [] as string[],
};

/** The create request of the form's values: the machine settings only for a machine client. */
function requestOf(organizationSlug: string, values: z.output<typeof ZCreateApplicationForm>): TCreateApplicationRequest {
  const base = { organization_slug: organizationSlug, name: values.name, slug: values.slug, logoUrl: values.logoUrl };
  if (values.kind !== 'machine') {
    const redirectUrls = values.redirectUrl ? [values.redirectUrl] : [];
    // A single-page app calls the token endpoint from the browser: its origin is allowed too.
    const allowedOrigins = values.kind === 'spa' && values.redirectUrl ? [new URL(values.redirectUrl).origin] : undefined;
    return { ...base, clientType: CLIENT_TYPE_OF_KIND[values.kind], redirectUrls, ...(allowedOrigins ? { allowedOrigins } : {}) };
  }
  const keyed = values.tokenEndpointAuthMethod === 'private_key_jwt';
  return {
    ...base,
    clientType: 'machine',
    tokenEndpointAuthMethod: values.tokenEndpointAuthMethod,
    permissions: values.permissions,
    ...(keyed ? { jwks: values.jwks, jwksUri: values.jwksUri } : {}),
  };
}

/**
 * "Create application" (the page header's primary button) and its form: name, optional slug and
 * logo (https only, checked by the contracts form schema), the kind of application and, unless it
 * is a machine client, the redirect URL its first sign-in returns to (a single-page app's origin
 * is allowed with it); a machine client gets its token endpoint authentication, keys and
 * permissions here instead. More allowlist entries and the OAuth provider are edited on the
 * application.
 */
export function CreateApplicationDialog({ organizationSlug, open, onOpenChange, onCreated }: Props) {
  const trpc = useTRPC();
  const form = useForm({ resolver: zodResolver(ZCreateApplicationForm), defaultValues: EMPTY });
  const errors = form.formState.errors;
  const kind = form.watch('kind');
  const method = form.watch('tokenEndpointAuthMethod');
  const permissions = form.watch('permissions');
  const create = useMutation(trpc.applications.create.mutationOptions());
  const { close, settle } = dialogMutation({ onOpenChange, forget: () => form.reset(EMPTY), mutation: create });
  const submit = form.handleSubmit(async (values) => {
    const created = await settle(create.mutateAsync(requestOf(organizationSlug, values)));
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
      wide={kind === 'machine'}
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
      <Field
        label="Application type"
        hint="It decides how the application proves who it is: a web server with the secret key, the others with PKCE; a machine client by the client credentials grant."
        error={errors.kind?.message}
      >
        {(control) => (
          <Select
            {...control}
            value={kind}
            options={KINDS}
            testId="application-create-client-type"
            onValueChange={(value) => form.setValue('kind', value, { shouldDirty: true })}
          />
        )}
      </Field>
      {kind !== 'machine' && (
        <Field
          label="Redirect URL"
          error={errors.redirectUrl?.message}
          hint="Where svc sends people back after they sign in: your app's callback. https, or http on localhost; add more on the application."
          testId="application-redirect-url"
        >
          {(control) => (
            <input
              {...control}
              placeholder={REDIRECT_PLACEHOLDER[kind]}
              autoComplete="off"
              inputMode="url"
              data-testid="application-redirect-url-input"
              {...form.register('redirectUrl')}
            />
          )}
        </Field>
      )}
      {kind === 'machine' && (
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
          testId="application-create-machine"
        />
      )}
    </FormDialog>
  );
}

import { zodResolver } from '@hookform/resolvers/zod';
import {
  type TBillingAdapterStatus,
  type TBillingMode,
  type TBillingProviderRecord,
  type TConnectBillingForm,
  ZConnectBillingForm,
} from '@svc/contracts/billing';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ReactElement } from 'react';
import { useForm } from 'react-hook-form';
import { dialogMutation, FormDialog } from '../../components/dialog.tsx';
import { Field } from '../../components/field.tsx';
import { Select, type SelectOption } from '../../components/select.tsx';
import { useTRPC } from '../../trpc.ts';
import { ACCOUNT_HINT, PROVIDER_LABEL, PROVIDER_OPTIONS, unconfiguredHint } from './providers.ts';

/** The Mode select's "not given" (the API then takes the key's mode): Radix keeps '' for "nothing chosen". */
const AS_THE_KEY = 'key';
type ModeChoice = TBillingMode | typeof AS_THE_KEY;

/** An empty input is "not given". */
const optional = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined);

type ConnectDialogProps = {
  organizationSlug: string;
  /** This svc's adapters: the Mode select names the key's mode, the Provider field warns of one without a key. */
  adapters: TBillingAdapterStatus[];
  open: boolean;
  onOpenChange: (open: boolean) => void;
  /** The section's primary button (connecting a provider); none when changing a connection. */
  trigger?: ReactElement;
  /** Given, the dialog changes this connection: its provider is fixed, its account and mode filled in. */
  record?: TBillingProviderRecord;
};

/**
 * Connect a provider, or change a connection, in a FormDialog: provider, the account usage is
 * recorded against, and the mode (as the key's, or sandbox or live), checked with the contracts
 * schema first. The API refuses a mode the key cannot serve; the refusal is shown in the dialog.
 */
export function ConnectDialog({ organizationSlug, adapters, open, onOpenChange, trigger, record }: ConnectDialogProps) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const connect = useMutation(
    trpc.billing.provider.connect.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.billing.provider.pathKey() }),
    }),
  );
  const initial: TConnectBillingForm = record
    ? { provider: record.provider, externalAccountId: record.externalAccountId ?? undefined, mode: record.mode }
    : { provider: 'stripe', externalAccountId: undefined, mode: undefined };
  const form = useForm<TConnectBillingForm>({ resolver: zodResolver(ZConnectBillingForm), defaultValues: initial });
  const errors = form.formState.errors;
  const provider = form.watch('provider');
  const mode = form.watch('mode');
  const keyMode = adapters.find((a) => a.provider === provider)?.mode;
  const modeOptions: SelectOption<ModeChoice>[] = [
    { value: AS_THE_KEY, label: keyMode ? `As the key (${keyMode})` : 'As the key' },
    { value: 'sandbox', label: 'sandbox' },
    { value: 'live', label: 'live' },
  ];
  const revalidate = { shouldValidate: form.formState.isSubmitted, shouldDirty: true };

  const { close, settle } = dialogMutation({ onOpenChange, forget: () => form.reset(initial), mutation: connect });
  const submit = form.handleSubmit(async (values) => {
    await settle(connect.mutateAsync({ ...values, organization_slug: organizationSlug }));
  });

  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={trigger}
      title={record ? `Change the ${PROVIDER_LABEL[record.provider]} connection` : 'Connect a provider'}
      description="Usage of this organization is recorded against this account at the provider. Give an id, never a key: the key stays in the server's environment."
      onSubmit={submit}
      submitLabel={record ? 'Save connection' : 'Connect'}
      pending={connect.isPending}
      pendingLabel="Connecting…"
      error={connect.error}
      errorTitle="Could not connect the provider"
      testId="billing-connect"
    >
      <div className="form-grid">
        <Field label="Provider" hint={unconfiguredHint(provider, adapters)}>
          {(control) => (
            <Select
              {...control}
              value={provider}
              options={PROVIDER_OPTIONS}
              disabled={record !== undefined}
              testId="billing-connect-provider"
              onValueChange={(picked) => form.setValue('provider', picked, revalidate)}
            />
          )}
        </Field>
        <Field
          label={`Account (${ACCOUNT_HINT[provider]})`}
          hint="Optional: without it the connection stays pending and nothing is synced."
          error={errors.externalAccountId?.message}
          testId="billing-connect-account"
        >
          {(control) => (
            <input
              {...control}
              autoComplete="off"
              data-testid="billing-connect-account"
              {...form.register('externalAccountId', { setValueAs: optional })}
            />
          )}
        </Field>
        <Field label="Mode" hint="Live sends usage to real customers; a test key only serves sandbox." error={errors.mode?.message}>
          {(control) => (
            <Select
              {...control}
              value={mode ?? AS_THE_KEY}
              options={modeOptions}
              testId="billing-connect-mode"
              onValueChange={(picked) => form.setValue('mode', picked === AS_THE_KEY ? undefined : picked, revalidate)}
            />
          )}
        </Field>
      </div>
    </FormDialog>
  );
}

import { zodResolver } from '@hookform/resolvers/zod';
import { type TBillingAdapterStatus, type TBillingMapping, type TBillingMappingBody, ZBillingMappingBody } from '@svc/contracts/billing';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ReactElement } from 'react';
import { useForm } from 'react-hook-form';
import { dialogMutation, FormDialog } from '../../components/dialog.tsx';
import { Field } from '../../components/field.tsx';
import { Select } from '../../components/select.tsx';
import { useTRPC } from '../../trpc.ts';
import { ITEM_HINT, PROVIDER_OPTIONS, unconfiguredHint } from './providers.ts';

type MappingDialogProps = {
  organizationSlug: string;
  /** This svc's adapters: the Provider field warns of one without a key. */
  adapters: TBillingAdapterStatus[];
  open: boolean;
  onOpenChange: (open: boolean) => void;
  /** The section's primary button (adding a mapping); none when re-pointing one. */
  trigger?: ReactElement;
  /** Given, the dialog re-points this mapping: its event type and provider are fixed, only the item changes. */
  mapping?: TBillingMapping;
};

const EMPTY: TBillingMappingBody = { provider: 'stripe', eventType: '', providerItemId: '' };

/**
 * Map a usage event type to a provider item, or re-point a mapping, in a FormDialog, checked with
 * the contracts schema first. One mapping per provider and event type: saving the same pair again
 * re-points it. The event type comes first, so the dialog opens with it focused.
 */
export function MappingDialog({ organizationSlug, adapters, open, onOpenChange, trigger, mapping }: MappingDialogProps) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const upsert = useMutation(
    trpc.billing.mapping.upsert.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.billing.mapping.pathKey() }),
    }),
  );
  const initial: TBillingMappingBody = mapping
    ? { provider: mapping.provider, eventType: mapping.eventType, providerItemId: mapping.providerItemId }
    : EMPTY;
  const form = useForm<TBillingMappingBody>({ resolver: zodResolver(ZBillingMappingBody), defaultValues: initial });
  const errors = form.formState.errors;
  const provider = form.watch('provider');
  const revalidate = { shouldValidate: form.formState.isSubmitted, shouldDirty: true };

  const { close, settle } = dialogMutation({ onOpenChange, forget: () => form.reset(initial), mutation: upsert });
  const submit = form.handleSubmit(async (values) => {
    await settle(upsert.mutateAsync({ ...values, organization_slug: organizationSlug }));
  });

  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={trigger}
      title={mapping ? `Re-point ${mapping.eventType}` : 'Add a mapping'}
      description={
        mapping
          ? 'Usage events of this type synced from now on go to the new item; what was synced stays where it went.'
          : 'Each usage event of this type is synced to the provider item.'
      }
      onSubmit={submit}
      submitLabel={mapping ? 'Re-point' : 'Save mapping'}
      pending={upsert.isPending}
      error={upsert.error}
      errorTitle="Could not save the mapping"
      testId="billing-mapping-dialog"
    >
      <div className="form-grid">
        <Field
          label="Usage event type"
          hint="Exactly as usage events carry it."
          error={errors.eventType?.message}
          testId="billing-mapping-event-type"
        >
          {(control) => (
            <input
              {...control}
              placeholder="api.request"
              autoComplete="off"
              readOnly={mapping !== undefined}
              // Fixed when re-pointing: Tab skips it, so the dialog opens on the item, the one thing to change.
              tabIndex={mapping !== undefined ? -1 : undefined}
              data-testid="billing-mapping-event-type"
              {...form.register('eventType')}
            />
          )}
        </Field>
        <Field label="Provider" hint={unconfiguredHint(provider, adapters)}>
          {(control) => (
            <Select
              {...control}
              value={provider}
              options={PROVIDER_OPTIONS}
              disabled={mapping !== undefined}
              testId="billing-mapping-provider"
              onValueChange={(picked) => form.setValue('provider', picked, revalidate)}
            />
          )}
        </Field>
        <Field label={`Provider item (${ITEM_HINT[provider]})`} error={errors.providerItemId?.message} testId="billing-mapping-item">
          {(control) => (
            <input {...control} autoComplete="off" data-testid="billing-mapping-item-input" {...form.register('providerItemId')} />
          )}
        </Field>
      </div>
    </FormDialog>
  );
}

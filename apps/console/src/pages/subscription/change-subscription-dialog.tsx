import { zodResolver } from '@hookform/resolvers/zod';
import { SUBSCRIPTION_STATUSES, type TSubscription, type TSubscriptionStatus, ZSubscriptionForm } from '@svc/contracts/subscriptions';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { toast } from 'sonner';
import { ConfirmDialog } from '../../components/confirm-dialog.tsx';
import { FormDialog } from '../../components/dialog.tsx';
import { Field } from '../../components/field.tsx';
import { Select, type SelectOption } from '../../components/select.tsx';
import { useTRPC } from '../../trpc.ts';

/** Each status with what it does to the organization, as the picker lists them. */
const STATUS_OPTIONS: SelectOption<TSubscriptionStatus>[] = SUBSCRIPTION_STATUSES.map((status) => ({
  value: status,
  label: {
    active: 'active',
    trialing: 'trialing',
    inactive: 'inactive: changes refused',
    cancelled: 'cancelled: changes refused',
    expired: 'expired: changes refused',
  }[status],
}));

/** The subscription as the form holds it: seats empty while the plan's limit applies. */
function formValues(subscription: TSubscription) {
  return {
    planKey: subscription.plan.key,
    seats: subscription.seats.bought === null ? '' : String(subscription.seats.bought),
    status: subscription.status,
  };
}

type Change = { planKey?: string; seats?: number | null; status?: TSubscriptionStatus };

/**
 * Platform admins: "Change subscription" (the page header's primary button) and its form: plan,
 * seats bought (empty: the plan's) and status; only what changed is sent. Cancelling asks first,
 * since the organization's changes are refused from then on.
 */
export function ChangeSubscriptionDialog({ subscription }: { subscription: TSubscription }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const { organization } = subscription;
  const [open, setOpen] = useState(false);
  /** The change waiting for the cancellation to be confirmed. */
  const [confirming, setConfirming] = useState<Change | null>(null);
  const plans = useQuery(trpc.subscriptions.plan.list.queryOptions({ limit: 200 }, { enabled: open }));
  const form = useForm({ resolver: zodResolver(ZSubscriptionForm), defaultValues: formValues(subscription) });
  const errors = form.formState.errors;
  const planKey = form.watch('planKey');
  const status = form.watch('status');
  const update = useMutation(trpc.subscriptions.update.mutationOptions());

  // The current plan is always a choice, also before the list has loaded.
  const listed = plans.data?.data ?? [];
  const planOptions: SelectOption<string>[] = (
    listed.some((p) => p.key === subscription.plan.key) ? listed : [subscription.plan, ...listed]
  ).map((p) => ({ value: p.key, label: p.isDefault ? `${p.name} (default)` : p.name }));

  const change = (next: boolean) => {
    if (next) {
      form.reset(formValues(subscription));
      update.reset();
    } else {
      setConfirming(null);
    }
    setOpen(next);
  };
  /** Sends the change; throws when the api refuses it (the dialog that asked shows why). */
  const save = async (body: Change) => {
    const saved = await update.mutateAsync({ organization_slug: organization.slug, ...body });
    queryClient.setQueryData(trpc.subscriptions.get.queryKey({ organization_slug: saved.organization.slug }), saved);
    change(false);
    toast.success(`Saved: ${saved.plan.name}, ${saved.status}`);
    await queryClient.invalidateQueries({ queryKey: trpc.subscriptions.get.pathKey() });
    // The Organizations page lists each organization's plan and status.
    await queryClient.invalidateQueries({ queryKey: trpc.tenants.list.pathKey() });
  };
  const submit = form.handleSubmit(async (values) => {
    const body: Change = {
      ...(values.planKey !== subscription.plan.key ? { planKey: values.planKey } : {}),
      ...(values.seats !== subscription.seats.bought ? { seats: values.seats } : {}),
      ...(values.status !== subscription.status ? { status: values.status } : {}),
    };
    if (Object.keys(body).length === 0) {
      change(false);
      return;
    }
    if (body.status === 'cancelled') {
      setConfirming(body);
      return;
    }
    await save(body).catch(() => undefined);
  });

  return (
    <>
      <FormDialog
        open={open}
        onOpenChange={change}
        trigger={
          <button type="button" className="button button--primary" data-testid="subscription-change-open">
            Change subscription
          </button>
        }
        title={`Change the subscription of ${organization.name}`}
        description="The change is audited as subscription.updated and sent to the organization's webhooks."
        onSubmit={submit}
        submitLabel="Save subscription"
        pending={update.isPending}
        // While the cancellation is being confirmed, its dialog shows a refusal.
        error={confirming ? null : update.error}
        errorTitle="Could not change the subscription"
        testId="subscription-change"
      >
        <Field label="Plan" error={errors.planKey?.message} hint="Its seat and usage limits apply at once.">
          {(control) => (
            <Select
              {...control}
              value={planKey}
              options={planOptions}
              testId="subscription-form-plan"
              onValueChange={(value) => form.setValue('planKey', value, { shouldDirty: true })}
            />
          )}
        </Field>
        <Field
          label="Seats bought"
          error={errors.seats?.message}
          hint={`Members allowed. Empty: the plan's (${subscription.plan.seatLimit === null ? 'unlimited' : subscription.plan.seatLimit} on ${subscription.plan.name}).`}
          testId="subscription-form-seats"
        >
          {(control) => <input {...control} inputMode="numeric" data-testid="subscription-form-seats" {...form.register('seats')} />}
        </Field>
        <Field
          label="Status"
          error={errors.status?.message}
          hint="Inactive, cancelled and expired refuse changes with 402; reads keep working."
        >
          {(control) => (
            <Select
              {...control}
              value={status}
              options={STATUS_OPTIONS}
              testId="subscription-form-status"
              onValueChange={(value) => form.setValue('status', value, { shouldDirty: true })}
            />
          )}
        </Field>
      </FormDialog>
      <ConfirmDialog
        open={confirming !== null}
        onOpenChange={(next) => !next && setConfirming(null)}
        title={`Cancel the subscription of ${organization.name}?`}
        consequence="Its applications, users, webhooks and usage can no longer be changed (402 subscription_inactive) until a platform admin reactivates it; reads keep working."
        confirmLabel="Cancel subscription"
        cancelLabel="Keep it"
        onConfirm={() => (confirming ? save(confirming) : Promise.resolve())}
        testId="subscription-cancel"
      />
    </>
  );
}

import { zodResolver } from '@hookform/resolvers/zod';
import {
  type TSubscriptionPlan,
  type TSubscriptionPlanFormInput,
  usageLimitsToLines,
  ZSubscriptionPlanForm,
} from '@svc/contracts/subscriptions';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { toast } from 'sonner';
import { dialogMutation, FormDialog } from '../../components/dialog.tsx';
import { Field } from '../../components/field.tsx';
import { useTRPC } from '../../trpc.ts';

/** The create dialog's key field: the dialog focuses it first. */
export const KEY_FIELD_ID = 'plan-create-key';

function useInvalidatePlans() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return async () => {
    await queryClient.invalidateQueries({ queryKey: trpc.subscriptions.plan.list.pathKey() });
    // A plan's limits are part of every subscription on it.
    await queryClient.invalidateQueries({ queryKey: trpc.subscriptions.get.pathKey() });
  };
}

function usePlanForm(defaultValues: TSubscriptionPlanFormInput) {
  return useForm({ resolver: zodResolver(ZSubscriptionPlanForm), defaultValues });
}

const EMPTY: TSubscriptionPlanFormInput = {
  key: '',
  name: '',
  seatLimit: '',
  usageLimits: '',
  usageThresholds: '50, 80, 100',
  features: '',
  isDefault: false,
};

/**
 * The plan form's fields (create and edit share them; `prefix` starts every test id). The default
 * plan cannot stop being the default from its own form: another plan takes over instead.
 */
function PlanFields({
  form,
  prefix,
  keyFieldId,
  defaultLocked,
}: {
  form: ReturnType<typeof usePlanForm>;
  prefix: string;
  keyFieldId?: string;
  defaultLocked?: boolean;
}) {
  const errors = form.formState.errors;
  return (
    <>
      <div className="form-grid">
        <Field label="Key" id={keyFieldId} error={errors.key?.message} hint="For the API: “team”." testId={`${prefix}-key`}>
          {(control) => (
            <input {...control} autoComplete="off" placeholder="team" data-testid={`${prefix}-key`} {...form.register('key')} />
          )}
        </Field>
        <Field label="Name" error={errors.name?.message} hint="What people read: “Team”." testId={`${prefix}-name`}>
          {(control) => (
            <input {...control} autoComplete="off" placeholder="Team" data-testid={`${prefix}-name`} {...form.register('name')} />
          )}
        </Field>
        <Field label="Seat limit" error={errors.seatLimit?.message} hint="Empty: unlimited." testId={`${prefix}-seats`}>
          {(control) => <input {...control} inputMode="numeric" data-testid={`${prefix}-seats`} {...form.register('seatLimit')} />}
        </Field>
      </div>
      <Field
        label="Usage limits per calendar month"
        error={errors.usageLimits?.message}
        hint={
          <>
            One <code>event_type = quantity</code> per line. None: unlimited.
          </>
        }
        testId={`${prefix}-usage-limits`}
      >
        {(control) => (
          <textarea
            {...control}
            rows={4}
            spellCheck={false}
            className="textarea--mono"
            placeholder="api_call = 100000"
            data-testid={`${prefix}-usage-limits`}
            {...form.register('usageLimits')}
          />
        )}
      </Field>
      <Field
        label="Usage alerts"
        error={errors.usageThresholds?.message}
        hint="Percentages of each limit at which usage.threshold_reached is recorded, ascending. Empty: none."
        testId={`${prefix}-usage-thresholds`}
      >
        {(control) => (
          <input
            {...control}
            autoComplete="off"
            placeholder="50, 80, 100"
            data-testid={`${prefix}-usage-thresholds`}
            {...form.register('usageThresholds')}
          />
        )}
      </Field>
      <Field
        label="Features"
        error={errors.features?.message}
        hint={
          <>
            Keys the plan includes, separated by commas: <code>sso, audit_export</code>. A key that is also a limited event type is usable
            while the month has quantity left.
          </>
        }
        testId={`${prefix}-features`}
      >
        {(control) => (
          <input
            {...control}
            autoComplete="off"
            spellCheck={false}
            placeholder="sso, audit_export"
            data-testid={`${prefix}-features`}
            {...form.register('features')}
          />
        )}
      </Field>
      {defaultLocked ? (
        <p className="muted" data-testid={`${prefix}-default-locked`}>
          This is the default plan for new organizations: to change that, make another plan the default.
        </p>
      ) : (
        <label className="check">
          <input type="checkbox" data-testid={`${prefix}-default`} {...form.register('isDefault')} />
          <span>Default plan for new organizations (the current default stops being one)</span>
        </label>
      )}
    </>
  );
}

type CreatePlanDialogProps = {
  open: boolean;
  onOpenChange: (open: boolean) => void;
  /** After the plan is stored and the dialog has closed (the page shows the first page). */
  onCreated: () => void;
};

/** "Create plan" (the page header's primary button) and its form, checked with the contracts schema first. */
export function CreatePlanDialog({ open, onOpenChange, onCreated }: CreatePlanDialogProps) {
  const trpc = useTRPC();
  const invalidate = useInvalidatePlans();
  const form = usePlanForm(EMPTY);
  const create = useMutation(trpc.subscriptions.plan.create.mutationOptions());

  const { close, settle } = dialogMutation({ onOpenChange, forget: () => form.reset(EMPTY), mutation: create });
  const submit = form.handleSubmit(async (values) => {
    const created = await settle(create.mutateAsync(values));
    if (created) {
      toast.success(`Plan ${created.name} created`);
      onCreated();
      await invalidate();
    }
  });

  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={
        <button type="button" className="button button--primary" data-testid="plan-create-open">
          Create plan
        </button>
      }
      title="Create plan"
      description="Seats and monthly usage limits per event type. Organizations move onto it from their Subscription page."
      wide
      onSubmit={submit}
      submitLabel="Create plan"
      pending={create.isPending}
      pendingLabel="Creating…"
      error={create.error}
      errorTitle="Could not create the plan"
      testId="plan-create"
    >
      <PlanFields form={form} prefix="plan-create" keyFieldId={KEY_FIELD_ID} />
    </FormDialog>
  );
}

/** A plan's stored values as the form holds them. */
function formValues(plan: TSubscriptionPlan): TSubscriptionPlanFormInput {
  return {
    key: plan.key,
    name: plan.name,
    seatLimit: plan.seatLimit === null ? '' : String(plan.seatLimit),
    usageLimits: usageLimitsToLines(plan.usageLimits),
    usageThresholds: plan.usageThresholds.join(', '),
    features: plan.features.join(', '),
    isDefault: plan.isDefault,
  };
}

/** Editing one plan (opened from its row's menu): the key is sent only when it changed. */
export function EditPlanDialog({ plan, onClose }: { plan: TSubscriptionPlan; onClose: () => void }) {
  const trpc = useTRPC();
  const invalidate = useInvalidatePlans();
  const form = usePlanForm(formValues(plan));
  const update = useMutation(trpc.subscriptions.plan.update.mutationOptions());
  const submit = form.handleSubmit(async (values) => {
    const saved = await update
      .mutateAsync({
        id: plan.id,
        ...(values.key !== plan.key ? { key: values.key } : {}),
        name: values.name,
        seatLimit: values.seatLimit,
        usageLimits: values.usageLimits,
        usageThresholds: values.usageThresholds,
        features: values.features,
        // The default stays the default until another plan takes over (the API refuses false).
        ...(values.isDefault && !plan.isDefault ? { isDefault: true } : {}),
      })
      .catch(() => undefined);
    if (saved) {
      toast.success(`Plan ${saved.name} saved`);
      onClose();
      await invalidate();
    }
  });

  return (
    <FormDialog
      open
      onOpenChange={(next) => !next && onClose()}
      title={`Edit the plan ${plan.name}`}
      description="Every organization on this plan gets the new limits at once."
      wide
      onSubmit={submit}
      submitLabel="Save plan"
      pending={update.isPending}
      error={update.error}
      errorTitle="Could not update the plan"
      testId="plan-edit-dialog"
    >
      <PlanFields form={form} prefix="plan-edit" defaultLocked={plan.isDefault} />
    </FormDialog>
  );
}

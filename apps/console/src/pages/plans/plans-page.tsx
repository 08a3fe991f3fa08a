import { zodResolver } from '@hookform/resolvers/zod';
import {
  type TSubscriptionPlan,
  type TSubscriptionPlanFormInput,
  usageLimitsToLines,
  ZSubscriptionPlanForm,
} from '@svc/contracts/subscriptions';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { focusField } from '../../components/empty-state.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PAGE_SIZE = 50;
/** The create form's key field: the empty list's button takes the admin here. */
const KEY_FIELD_ID = 'plan-create-key';
const textArea = { width: '100%', minHeight: 72, fontFamily: 'var(--mono)', padding: '0.4rem 0.5rem' };

/**
 * Subscription plans: what each allows (seats, usage per event type per month) and which one new
 * organizations get. Everyone signed in sees them; platform admins create and edit them (the API
 * refuses anyone else with 403, whatever this page shows).
 */
export function PlansPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const pager = usePager();
  const isPlatformAdmin = active.me?.isPlatformAdmin === true;
  const plans = useQuery({
    ...trpc.subscriptions.plan.list.queryOptions({ limit: PAGE_SIZE, cursor: pager.cursor }),
    placeholderData: keepPreviousData,
  });
  const [editing, setEditing] = useState<string | null>(null);

  return (
    <div data-testid="page-plans">
      <PageHeader
        title="Plans"
        description="Subscription plans: seats and monthly usage limits per event type. New organizations get the default plan, active."
      />
      <div style={{ display: 'grid', gap: 16 }}>
        {isPlatformAdmin ? (
          <CreatePlanForm onCreated={pager.reset} />
        ) : (
          <p className="muted" data-testid="plans-read-only">
            Only platform admins create and change plans.
          </p>
        )}
        <ListPage
          testId="plans"
          noun="plans"
          title="Plans"
          query={plans}
          pager={pager}
          empty={
            isPlatformAdmin
              ? { title: 'No plans yet.', next: 'Create one above.', action: { label: 'Create a plan', onClick: focusField(KEY_FIELD_ID) } }
              : { title: 'No plans yet.', next: 'A platform admin creates them.' }
          }
          columns={['Plan', 'Key', 'Seats', 'Usage limits per month', 'Alerts', '']}
          rowKey={(plan) => plan.id}
          row={(plan) =>
            editing === plan.id ? (
              <tr data-testid="plan-row" data-plan-key={plan.key}>
                <td colSpan={6}>
                  <EditPlanForm plan={plan} onDone={() => setEditing(null)} />
                </td>
              </tr>
            ) : (
              <PlanRow plan={plan} canEdit={isPlatformAdmin} onEdit={() => setEditing(plan.id)} />
            )
          }
        />
      </div>
    </div>
  );
}

function PlanRow({ plan, canEdit, onEdit }: { plan: TSubscriptionPlan; canEdit: boolean; onEdit: () => void }) {
  const limits = Object.entries(plan.usageLimits);
  return (
    <tr data-testid="plan-row" data-plan-key={plan.key} data-plan-id={plan.id}>
      <td>
        <span data-testid="plan-name">{plan.name}</span>{' '}
        {plan.isDefault && (
          <span className="badge" data-testid="plan-default">
            Default
          </span>
        )}
      </td>
      <td>
        <code>{plan.key}</code>
      </td>
      <td data-testid="plan-seats">{plan.seatLimit === null ? 'unlimited' : plan.seatLimit}</td>
      <td data-testid="plan-usage-limits">
        {limits.length === 0 ? (
          <span className="muted">unlimited</span>
        ) : (
          limits.map(([type, quantity]) => (
            <div key={type}>
              <code>{type}</code> {quantity.toLocaleString()}
            </div>
          ))
        )}
      </td>
      <td data-testid="plan-usage-thresholds">
        {plan.usageThresholds.length === 0 ? (
          <span className="muted">none</span>
        ) : (
          <span title="usage.threshold_reached is recorded when an event type's month reaches each percentage of its limit">
            {plan.usageThresholds.map((t) => `${t}%`).join(' · ')}
          </span>
        )}
      </td>
      <td>
        {canEdit && (
          <button type="button" className="button" onClick={onEdit} data-testid="plan-edit">
            Edit
          </button>
        )}
      </td>
    </tr>
  );
}

function useInvalidatePlans() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return async () => {
    await queryClient.invalidateQueries({ queryKey: trpc.subscriptions.plan.list.pathKey() });
    // A plan's limits are part of every subscription on it.
    await queryClient.invalidateQueries({ queryKey: trpc.subscriptions.get.pathKey() });
  };
}

/** The plan form's fields (create and edit share them). */
function PlanFields({ form, prefix, defaultLocked }: { form: ReturnType<typeof usePlanForm>; prefix: string; defaultLocked?: boolean }) {
  const errors = form.formState.errors;
  return (
    <>
      <div className="form-row">
        <label className="form-field">
          <span>Key</span>
          <input
            id={prefix === 'plan-create' ? KEY_FIELD_ID : undefined}
            autoComplete="off"
            placeholder="team"
            data-testid={`${prefix}-key`}
            {...form.register('key')}
          />
          {errors.key && (
            <span className="form-field__error" data-testid={`${prefix}-key-error`}>
              {errors.key.message}
            </span>
          )}
        </label>
        <label className="form-field">
          <span>Name</span>
          <input autoComplete="off" placeholder="Team" data-testid={`${prefix}-name`} {...form.register('name')} />
          {errors.name && <span className="form-field__error">{errors.name.message}</span>}
        </label>
        <label className="form-field">
          <span>Seat limit (empty: unlimited)</span>
          <input inputMode="numeric" data-testid={`${prefix}-seats`} {...form.register('seatLimit')} />
          {errors.seatLimit && (
            <span className="form-field__error" data-testid={`${prefix}-seats-error`}>
              {errors.seatLimit.message}
            </span>
          )}
        </label>
      </div>
      <label className="form-field">
        <span>
          Usage limits per calendar month, one <code>event_type = quantity</code> per line (none: unlimited)
        </span>
        <textarea
          style={textArea}
          placeholder="api_call = 100000"
          data-testid={`${prefix}-usage-limits`}
          {...form.register('usageLimits')}
        />
        {errors.usageLimits && (
          <span className="form-field__error" data-testid={`${prefix}-usage-limits-error`}>
            {errors.usageLimits.message}
          </span>
        )}
      </label>
      <label className="form-field">
        <span>Usage alerts: percentages of each limit that record usage.threshold_reached (empty: none)</span>
        <input
          autoComplete="off"
          placeholder="50, 80, 100"
          data-testid={`${prefix}-usage-thresholds`}
          {...form.register('usageThresholds')}
        />
        {errors.usageThresholds && (
          <span className="form-field__error" data-testid={`${prefix}-usage-thresholds-error`}>
            {errors.usageThresholds.message}
          </span>
        )}
      </label>
      {defaultLocked ? (
        <p className="muted" data-testid={`${prefix}-default-locked`} style={{ margin: 0 }}>
          This is the default plan for new organizations: to change that, make another plan the default.
        </p>
      ) : (
        <label style={{ display: 'flex', gap: 6, alignItems: 'center' }}>
          <input type="checkbox" data-testid={`${prefix}-default`} {...form.register('isDefault')} />
          <span>Default plan for new organizations (the current default stops being one)</span>
        </label>
      )}
    </>
  );
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
  isDefault: false,
};

function CreatePlanForm({ onCreated }: { onCreated: () => void }) {
  const trpc = useTRPC();
  const invalidate = useInvalidatePlans();
  const form = usePlanForm(EMPTY);
  const create = useMutation(
    trpc.subscriptions.plan.create.mutationOptions({
      onSuccess: async () => {
        form.reset(EMPTY);
        onCreated();
        await invalidate();
      },
    }),
  );
  const submit = form.handleSubmit((values) => create.mutateAsync(values).catch(() => undefined));

  return (
    <section className="panel" data-testid="plan-create">
      <h2 className="panel__title">New plan</h2>
      <form onSubmit={submit} noValidate data-testid="plan-create-form" style={{ display: 'grid', gap: 12 }}>
        <PlanFields form={form} prefix="plan-create" />
        <div className="form-row">
          <button type="submit" className="button button--primary" disabled={create.isPending} data-testid="plan-create-submit">
            {create.isPending ? 'Creating…' : 'Create plan'}
          </button>
        </div>
      </form>
      {create.isSuccess && (
        <p className="muted" data-testid="plan-created">
          Created {create.data.name} ({create.data.key}).
        </p>
      )}
      {create.isError && <ErrorPanel error={create.error} title="Could not create the plan" />}
    </section>
  );
}

function EditPlanForm({ plan, onDone }: { plan: TSubscriptionPlan; onDone: () => void }) {
  const trpc = useTRPC();
  const invalidate = useInvalidatePlans();
  const form = usePlanForm({
    key: plan.key,
    name: plan.name,
    seatLimit: plan.seatLimit === null ? '' : String(plan.seatLimit),
    usageLimits: usageLimitsToLines(plan.usageLimits),
    usageThresholds: plan.usageThresholds.join(', '),
    isDefault: plan.isDefault,
  });
  const update = useMutation(
    trpc.subscriptions.plan.update.mutationOptions({
      onSuccess: async () => {
        await invalidate();
        onDone();
      },
    }),
  );
  const submit = form.handleSubmit((values) =>
    update
      .mutateAsync({
        id: plan.id,
        ...(values.key !== plan.key ? { key: values.key } : {}),
        name: values.name,
        seatLimit: values.seatLimit,
        usageLimits: values.usageLimits,
        usageThresholds: values.usageThresholds,
        // The default stays the default until another plan takes over (the API refuses false).
        ...(values.isDefault && !plan.isDefault ? { isDefault: true } : {}),
      })
      .catch(() => undefined),
  );

  return (
    <form onSubmit={submit} noValidate data-testid="plan-edit-form" style={{ display: 'grid', gap: 12 }}>
      <PlanFields form={form} prefix="plan-edit" defaultLocked={plan.isDefault} />
      <div className="form-row">
        <button type="submit" className="button button--primary" disabled={update.isPending} data-testid="plan-edit-save">
          {update.isPending ? 'Saving…' : 'Save'}
        </button>
        <button type="button" className="button" onClick={onDone} data-testid="plan-edit-cancel">
          Cancel
        </button>
      </div>
      {update.isError && <ErrorPanel error={update.error} title="Could not update the plan" />}
    </form>
  );
}

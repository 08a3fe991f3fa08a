import { zodResolver } from '@hookform/resolvers/zod';
import { type TApiKeyWithSecret, ZCreateApiKeyBody } from '@svc/contracts/api-keys';
import { PERMISSION_CATALOG, PERMISSIONS } from '@svc/contracts/permissions';
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { dialogMutation, FormDialog } from '../../components/dialog.tsx';
import { Field, FieldSet } from '../../components/field.tsx';
import { Select, type SelectOption } from '../../components/select.tsx';
import { useTRPC } from '../../trpc.ts';

/** The name field's id: the empty list's button opens the dialog, and the dialog focuses it. */
export const NAME_FIELD_ID = 'api-key-name';

/** Scope presets: a click fills the grid, which the admin can then adjust. */
const PRESETS = [
  { label: 'Read only', scopes: PERMISSIONS.filter((name) => name.endsWith('.read')) },
  { label: 'Full access', scopes: [...PERMISSIONS] },
  { label: 'None', scopes: [] },
] as const;

type Expiry = 'never' | '30' | '90' | '365' | 'date';

const EXPIRY_OPTIONS: SelectOption<Expiry>[] = [
  { value: 'never', label: 'Never' },
  { value: '30', label: 'In 30 days' },
  { value: '90', label: 'In 90 days' },
  { value: '365', label: 'In a year' },
  { value: 'date', label: 'On a date…' },
];

/** The end of a local calendar day, as the instant the api stores: the key works through that day. */
function endOfLocalDay(day: Date): string {
  const end = new Date(day);
  end.setHours(23, 59, 59, 999);
  return end.toISOString();
}

/** `<input type="date">` gives a local calendar day (yyyy-mm-dd), or '' when cleared. */
function fromDateInput(value: string): string | undefined {
  if (value === '') {
    return undefined;
  }
  const day = new Date(`${value}T00:00:00`);
  return Number.isNaN(day.getTime()) ? value : endOfLocalDay(day);
}

function daysFromNow(days: number): string {
  const day = new Date();
  day.setDate(day.getDate() + days);
  return endOfLocalDay(day);
}

/** Tomorrow as yyyy-mm-dd: the earliest day the date picker offers. */
function tomorrow(): string {
  const day = new Date();
  day.setDate(day.getDate() + 1);
  return `${day.getFullYear()}-${String(day.getMonth() + 1).padStart(2, '0')}-${String(day.getDate()).padStart(2, '0')}`;
}

type CreateApiKeyDialogProps = {
  organizationId: string;
  open: boolean;
  onOpenChange: (open: boolean) => void;
  /** Called with the created key and its secret, after the dialog has closed (the page shows it once). */
  onCreated: (created: TApiKeyWithSecret) => void | Promise<void>;
};

const EMPTY = { name: '', scopes: [], expiresAt: undefined };

/**
 * "Create API key" (the page header's primary button) and its form: name, expiry, scopes from the
 * permission catalog with presets. Validated with the contracts body schema before anything is sent.
 */
export function CreateApiKeyDialog({ organizationId, open, onOpenChange, onCreated }: CreateApiKeyDialogProps) {
  const trpc = useTRPC();
  const form = useForm({ resolver: zodResolver(ZCreateApiKeyBody), defaultValues: EMPTY });
  const [expiry, setExpiry] = useState<Expiry>('never');
  const errors = form.formState.errors;
  const create = useMutation(trpc.apiKeys.create.mutationOptions());
  // After a failed submit, every change validates again, so a fixed error goes away at once.
  const revalidate = { shouldValidate: form.formState.isSubmitted, shouldDirty: true };

  const { close, settle } = dialogMutation({
    onOpenChange,
    forget: () => {
      form.reset(EMPTY);
      setExpiry('never');
    },
    mutation: create,
  });
  const submit = form.handleSubmit(async (values) => {
    const created = await settle(create.mutateAsync({ id: organizationId, ...values }));
    if (created) {
      await onCreated(created);
    }
  });

  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={
        <button type="button" className="button button--primary" data-testid="api-key-create-open">
          Create API key
        </button>
      }
      title="Create API key"
      description={
        <>
          A key acts on this organization only, with the scopes you choose (never more than you hold yourself). Send it as{' '}
          <code>Authorization: Bearer sk_live_…</code> from a server; never ship it to a browser.
        </>
      }
      wide
      onSubmit={submit}
      submitLabel="Create key"
      pending={create.isPending}
      pendingLabel="Creating…"
      error={create.error}
      errorTitle="Could not create the key"
      testId="api-key-create"
    >
      <div className="form-grid">
        <Field label="Name" id={NAME_FIELD_ID} error={errors.name?.message} hint="Say what uses it: “CI deploy”." testId="api-key-name">
          {(control) => <input {...control} autoComplete="off" data-testid="api-key-name-input" {...form.register('name')} />}
        </Field>
        <Field
          label="Expires"
          error={errors.expiresAt?.message}
          hint="Requests with it are refused after that day."
          testId="api-key-expires"
        >
          {(control) => (
            <Select
              {...control}
              value={expiry}
              options={EXPIRY_OPTIONS}
              testId="api-key-expiry"
              onValueChange={(choice) => {
                setExpiry(choice);
                const at = choice === 'never' || choice === 'date' ? undefined : daysFromNow(Number(choice));
                form.setValue('expiresAt', at, revalidate);
              }}
            />
          )}
        </Field>
        {expiry === 'date' && (
          <Field label="Last day it works" hint="It works through the end of that day.">
            {(control) => (
              <input
                {...control}
                type="date"
                min={tomorrow()}
                data-testid="api-key-expires-input"
                onChange={(e) => form.setValue('expiresAt', fromDateInput(e.target.value), revalidate)}
              />
            )}
          </Field>
        )}
      </div>
      <FieldSet legend="Scopes" error={errors.scopes?.message} testId="api-key-scopes">
        <div className="presets">
          <span className="muted">Presets:</span>
          {PRESETS.map((preset) => (
            <button
              key={preset.label}
              type="button"
              className="button button--small"
              onClick={() => form.setValue('scopes', [...preset.scopes], revalidate)}
              data-testid={`api-key-preset-${preset.label.toLowerCase().replace(/\s+/g, '-')}`}
            >
              {preset.label}
            </button>
          ))}
        </div>
        <div className="check-grid">
          {PERMISSION_CATALOG.map((permission) => (
            <label key={permission.name} className="check">
              <input
                type="checkbox"
                value={permission.name}
                data-testid={`api-key-scope-${permission.name}`}
                {...form.register('scopes')}
              />
              <span>
                <code>{permission.name}</code> <span className="muted">{permission.description}</span>
              </span>
            </label>
          ))}
        </div>
      </FieldSet>
    </FormDialog>
  );
}

import { zodResolver } from '@hookform/resolvers/zod';
import { type TCreateWebhookEndpointBody, WEBHOOK_EVENT_TYPE_CATALOG, ZCreateWebhookEndpointBody } from '@svc/contracts/webhooks';
import type { ReactElement } from 'react';
import { useForm } from 'react-hook-form';
import { FormDialog } from '../../components/dialog.tsx';
import { Field, FieldSet } from '../../components/field.tsx';

/** The create form's URL field's id: the dialog focuses it when it opens. */
export const URL_FIELD_ID = 'webhook-create-url';

type Props = {
  /** `create` or `edit`: names the title, the submit button and the test ids (`webhook-<mode>-…`). */
  mode: 'create' | 'edit';
  open: boolean;
  onOpenChange: (open: boolean) => void;
  /** The header's primary button (create only). */
  trigger?: ReactElement;
  /** The endpoint's current values (edit). */
  defaultValues?: TCreateWebhookEndpointBody;
  /** The mutation: resolves true when saved, and the dialog then closes. */
  onSubmit: (values: TCreateWebhookEndpointBody) => Promise<boolean>;
  pending: boolean;
  error: unknown;
};

const EMPTY: TCreateWebhookEndpointBody = { url: '', eventTypes: [], description: '' };

/** The catalog grouped by the part before the dot (`user.created` → user), in catalog order. */
const EVENT_GROUPS = WEBHOOK_EVENT_TYPE_CATALOG.reduce<{ group: string; types: typeof WEBHOOK_EVENT_TYPE_CATALOG }[]>((groups, entry) => {
  const group = entry.type.split('.')[0] ?? entry.type;
  const found = groups.find((g) => g.group === group);
  if (found) {
    found.types.push(entry);
  } else {
    groups.push({ group, types: [entry] });
  }
  return groups;
}, []);

/**
 * Create or edit an endpoint in a FormDialog: URL, description and the event types (checkboxes
 * from the catalog, grouped, each group with "All"), checked with the contracts body schema before
 * anything is sent. The URL's address rules are the API's to judge: its refusal
 * (`webhook_url_invalid`, `webhook_url_not_allowed`) is shown in the dialog.
 */
export function WebhookEndpointDialog({ mode, open, onOpenChange, trigger, defaultValues = EMPTY, onSubmit, pending, error }: Props) {
  const form = useForm<TCreateWebhookEndpointBody>({ resolver: zodResolver(ZCreateWebhookEndpointBody), defaultValues });
  const errors = form.formState.errors;
  const prefix = `webhook-${mode}`;
  const chosen = form.watch('eventTypes');
  const revalidate = { shouldValidate: form.formState.isSubmitted, shouldDirty: true };
  // Closing forgets what was typed: the next opening starts from the endpoint's values (edit) or empty (create).
  const close = (next: boolean) => {
    if (!next) {
      form.reset(defaultValues);
    }
    onOpenChange(next);
  };
  const submit = form.handleSubmit(async (values) => {
    if (await onSubmit(values)) {
      close(false);
    }
  });

  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={trigger}
      title={mode === 'create' ? 'Add endpoint' : 'Edit endpoint'}
      description="svc POSTs each event you tick to this URL, signed with the endpoint's secret, and retries failures for about a day."
      wide
      onSubmit={submit}
      submitLabel={mode === 'create' ? 'Create endpoint' : 'Save changes'}
      pending={pending}
      pendingLabel={mode === 'create' ? 'Creating…' : 'Saving…'}
      error={error}
      errorTitle={mode === 'create' ? 'Could not create the endpoint' : 'Could not save the endpoint'}
      testId={prefix}
    >
      <div className="form-grid">
        <Field label="Receiver URL" id={mode === 'create' ? URL_FIELD_ID : undefined} error={errors.url?.message} testId={`${prefix}-url`}>
          {(control) => (
            <input {...control} placeholder="https://example.com/webhooks/svc" data-testid={`${prefix}-url`} {...form.register('url')} />
          )}
        </Field>
        <Field label="Description (optional)" error={errors.description?.message} testId={`${prefix}-description`}>
          {(control) => (
            <input {...control} placeholder="Billing sync" data-testid={`${prefix}-description`} {...form.register('description')} />
          )}
        </Field>
      </div>
      <FieldSet legend="Event types" error={errors.eventTypes?.message} testId={`${prefix}-event-types`}>
        {EVENT_GROUPS.map(({ group, types }) => {
          const names: string[] = types.map((t) => t.type);
          const all = names.every((name) => (chosen as string[]).includes(name));
          return (
            <div key={group} className="event-group">
              <label className="check event-group__all">
                <input
                  type="checkbox"
                  checked={all}
                  data-testid={`${prefix}-group-${group}`}
                  onChange={() => {
                    const rest = (chosen as string[]).filter((name) => !names.includes(name));
                    form.setValue('eventTypes', (all ? rest : [...rest, ...names]) as TCreateWebhookEndpointBody['eventTypes'], revalidate);
                  }}
                />
                <span>
                  All <code>{group}.*</code> events
                </span>
              </label>
              <div className="check-grid">
                {types.map((eventType) => (
                  <label key={eventType.type} className="check">
                    <input
                      type="checkbox"
                      value={eventType.type}
                      data-testid={`${prefix}-type-${eventType.type}`}
                      {...form.register('eventTypes')}
                    />
                    <span>
                      <code>{eventType.type}</code> <span className="muted">{eventType.description}</span>
                    </span>
                  </label>
                ))}
              </div>
            </div>
          );
        })}
      </FieldSet>
    </FormDialog>
  );
}

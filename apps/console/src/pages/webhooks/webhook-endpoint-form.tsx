import { zodResolver } from '@hookform/resolvers/zod';
import { type TCreateWebhookEndpointBody, WEBHOOK_EVENT_TYPE_CATALOG, ZCreateWebhookEndpointBody } from '@svc/contracts/webhooks';
import { useForm } from 'react-hook-form';

/** The create form's URL field's id: the empty list's button takes the admin here. */
export const URL_FIELD_ID = 'webhook-create-url';

type Props = {
  /** `create` or `edit`: names the submit button and the test ids. */
  mode: 'create' | 'edit';
  defaultValues?: TCreateWebhookEndpointBody;
  /** Resolves true when saved (the create form is then cleared). */
  onSubmit: (values: TCreateWebhookEndpointBody) => Promise<boolean>;
  pending: boolean;
  onCancel?: () => void;
};

const EMPTY: TCreateWebhookEndpointBody = { url: '', eventTypes: [], description: '' };

/**
 * URL, description and the event types (checkboxes from the catalog), checked with the contracts
 * body schema before anything is sent. The URL's address rules are the API's to judge: its
 * refusal (`webhook_url_invalid`, `webhook_url_not_allowed`) is shown by the page.
 */
export function WebhookEndpointForm({ mode, defaultValues = EMPTY, onSubmit, pending, onCancel }: Props) {
  const form = useForm<TCreateWebhookEndpointBody>({
    resolver: zodResolver(ZCreateWebhookEndpointBody),
    defaultValues,
  });
  const errors = form.formState.errors;
  const prefix = `webhook-${mode}`;
  const submit = form.handleSubmit(async (values) => {
    if ((await onSubmit(values)) && mode === 'create') {
      form.reset(EMPTY);
    }
  });

  return (
    <form onSubmit={submit} noValidate data-testid={`${prefix}-form`}>
      <div className="form-row">
        <label className="form-field" style={{ flex: '2 1 360px' }}>
          <span>Receiver URL</span>
          <input
            id={mode === 'create' ? URL_FIELD_ID : undefined}
            placeholder="https://example.com/webhooks/svc"
            data-testid={`${prefix}-url`}
            {...form.register('url')}
          />
          {errors.url && (
            <span className="form-field__error" data-testid={`${prefix}-url-error`}>
              {errors.url.message}
            </span>
          )}
        </label>
        <label className="form-field" style={{ flex: '1 1 240px' }}>
          <span>Description (optional)</span>
          <input placeholder="Billing sync" data-testid={`${prefix}-description`} {...form.register('description')} />
          {errors.description && <span className="form-field__error">{errors.description.message}</span>}
        </label>
      </div>
      <fieldset style={{ border: '1px solid var(--border)', borderRadius: 8, padding: '8px 12px' }} data-testid={`${prefix}-event-types`}>
        <legend>Event types</legend>
        <div style={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fill, minmax(280px, 1fr))', gap: '4px 16px' }}>
          {WEBHOOK_EVENT_TYPE_CATALOG.map((eventType) => (
            <label key={eventType.type} style={{ display: 'flex', gap: 8, alignItems: 'baseline' }}>
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
        {errors.eventTypes && (
          <span className="form-field__error" data-testid={`${prefix}-event-types-error`}>
            {errors.eventTypes.message ?? 'choose event types from the list'}
          </span>
        )}
      </fieldset>
      <div className="form-row">
        <button type="submit" className="button button--primary" disabled={pending} data-testid={`${prefix}-submit`}>
          {mode === 'create' ? (pending ? 'Creating…' : 'Create endpoint') : pending ? 'Saving…' : 'Save'}
        </button>
        {onCancel && (
          <button type="button" className="button" onClick={onCancel} data-testid={`${prefix}-cancel`}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

import { Close, Content, Description, Overlay, Portal, Root, Title, Trigger } from '@radix-ui/react-dialog';
import type { BaseSyntheticEvent, ReactElement, ReactNode } from 'react';
import { ErrorPanel } from './error-panel.tsx';

type DialogProps = {
  /** Controlled: the page owns whether it is open (it closes it after a successful save). */
  open?: boolean;
  onOpenChange?: (open: boolean) => void;
  /** The button that opens it, rendered as given; focus returns to it on close. */
  trigger?: ReactElement;
  /** The dialog's heading and accessible name: "Create API key". */
  title: string;
  /** One sentence under the title; also the dialog's accessible description. */
  description?: ReactNode;
  children: ReactNode;
  /** Buttons at the bottom, right-aligned (a FormDialog puts its own). */
  footer?: ReactNode;
  /** 48rem instead of 32rem: forms with a grid of options. */
  wide?: boolean;
  /**
   * False for what must not be lost to a stray click or Escape (a secret shown once): only the
   * dialog's own button closes it.
   */
  dismissible?: boolean;
  testId?: string;
};

/**
 * A modal dialog (Radix): focus moves in and stays in, Escape and the overlay close it, focus goes
 * back to the trigger. For forms use FormDialog, for confirmations ConfirmDialog.
 */
export function Dialog({
  open,
  onOpenChange,
  trigger,
  title,
  description,
  children,
  footer,
  wide = false,
  dismissible = true,
  testId,
}: DialogProps) {
  const keep = dismissible ? undefined : (event: Event) => event.preventDefault();
  return (
    <Root open={open} onOpenChange={onOpenChange}>
      {trigger && <Trigger asChild>{trigger}</Trigger>}
      <Portal>
        <Overlay className="dialog__overlay" />
        <Content
          className={wide ? 'dialog dialog--wide' : 'dialog'}
          data-testid={testId}
          onEscapeKeyDown={keep}
          onInteractOutside={keep}
          // Without a description, say so: Radix otherwise warns that one is missing.
          {...(description === undefined ? { 'aria-describedby': undefined } : {})}
        >
          <Title className="dialog__title">{title}</Title>
          {description !== undefined && <Description className="dialog__description">{description}</Description>}
          {children}
          {footer && <div className="dialog__footer">{footer}</div>}
        </Content>
      </Portal>
    </Root>
  );
}

type FormDialogProps = Omit<DialogProps, 'footer' | 'children'> & {
  /** The fields (Field, FieldSet). */
  children: ReactNode;
  /** react-hook-form's `form.handleSubmit(...)`: validation first, then the mutation. */
  onSubmit: (event?: BaseSyntheticEvent) => Promise<void>;
  /** The primary button: "Create key", "Save changes". */
  submitLabel: string;
  /** While the mutation runs: the button says this and waits. */
  pending: boolean;
  pendingLabel?: string;
  /** The mutation's failure, shown above the buttons (the form stays filled in). */
  error?: unknown;
  /** The error's heading: "Could not create the key". */
  errorTitle?: string;
  /** What the admin can do about the error, right under it (a duplicate invitation's Resend and Revoke). */
  errorActions?: ReactNode;
  /** `<testId>-submit`, `<testId>-cancel` and `<testId>-form` derive from it. */
  testId: string;
};

/**
 * Create and edit forms open in this, from a primary button in the page header. The page keeps
 * `open` and closes it when the mutation succeeds; Cancel, Escape and the overlay close it too.
 */
export function FormDialog({
  children,
  onSubmit,
  submitLabel,
  pending,
  pendingLabel = 'Saving…',
  error,
  errorTitle = 'Could not save',
  errorActions,
  testId,
  ...dialog
}: FormDialogProps) {
  return (
    <Dialog {...dialog} testId={testId}>
      <form onSubmit={onSubmit} noValidate data-testid={`${testId}-form`}>
        {children}
        {error !== undefined && error !== null && <ErrorPanel error={error} title={errorTitle} />}
        {errorActions}
        <div className="dialog__footer">
          <Close asChild>
            <button type="button" className="button" data-testid={`${testId}-cancel`}>
              Cancel
            </button>
          </Close>
          <button type="submit" className="button button--primary" disabled={pending} data-testid={`${testId}-submit`}>
            {pending ? pendingLabel : submitLabel}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/**
 * The open state and submit of a FormDialog around one mutation: `close(false)` forgets what was
 * typed (`forget`, e.g. `() => form.reset(EMPTY)`) and the mutation's refusal, so the next opening
 * starts afresh; `settle(mutation.mutateAsync(...))` gives the result and closes the dialog, or
 * gives undefined when the mutation failed (its error stays in the dialog, the form filled in).
 */
export function dialogMutation({
  onOpenChange,
  forget,
  mutation,
}: {
  onOpenChange: (open: boolean) => void;
  forget: () => void;
  mutation: { reset: () => void };
}) {
  const close = (next: boolean) => {
    if (!next) {
      forget();
      mutation.reset();
    }
    onOpenChange(next);
  };
  const settle = async <TResult,>(sent: Promise<TResult>): Promise<TResult | undefined> => {
    const result = await sent.catch(() => undefined);
    if (result) {
      close(false);
    }
    return result;
  };
  return { close, settle };
}

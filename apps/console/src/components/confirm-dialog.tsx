import { Action, Cancel, Content, Description, Overlay, Portal, Root, Title } from '@radix-ui/react-alert-dialog';
import { type ReactNode, type RefObject, useId, useState } from 'react';
import { ErrorPanel } from './error-panel.tsx';

export type ConfirmDialogProps = {
  open: boolean;
  onOpenChange: (open: boolean) => void;
  /** The question, naming the record: "Revoke the key CI deploy?" */
  title: string;
  /** One sentence on what happens, and whether it can be undone. */
  consequence: ReactNode;
  /** The confirming button, a verb: "Revoke key". */
  confirmLabel: string;
  /** The button that backs out; "Cancel" unless that would read oddly beside the confirm label. */
  cancelLabel?: string;
  /** `danger` (the default) removes or stops something; `primary` only adds work (a replay). */
  tone?: 'danger' | 'primary';
  /**
   * Where the loss is large: the record's name, which the admin types before the button works.
   * Leave it out for what is easily redone.
   */
  typeToConfirm?: string;
  /** Runs on confirm. The dialog waits for it, closes when it resolves, shows its error if it throws. */
  onConfirm: () => Promise<unknown>;
  /** Where focus goes when the dialog closes (the row's menu button); by default where it was. */
  returnFocusTo?: RefObject<HTMLElement | null>;
  /** `<testId>` on the dialog, `<testId>-confirm` on its button, `<testId>-input` on the name field. */
  testId?: string;
};

/**
 * Every destructive or consequential action goes through this alert dialog (Radix): it names the
 * record and the consequence, Cancel has the focus first, and a failure stays in the dialog.
 */
export function ConfirmDialog({
  open,
  onOpenChange,
  title,
  consequence,
  confirmLabel,
  cancelLabel = 'Cancel',
  tone = 'danger',
  typeToConfirm,
  onConfirm,
  returnFocusTo,
  testId = 'confirm-dialog',
}: ConfirmDialogProps) {
  const [busy, setBusy] = useState(false);
  const [typed, setTyped] = useState('');
  const [error, setError] = useState<unknown>(null);
  const inputId = useId();
  const ready = typeToConfirm === undefined || typed === typeToConfirm;
  const change = (next: boolean) => {
    if (!next) {
      setTyped('');
      setError(null);
    }
    onOpenChange(next);
  };
  return (
    <Root open={open} onOpenChange={change}>
      <Portal>
        <Overlay className="dialog__overlay" />
        <Content
          className="dialog"
          data-testid={testId}
          onCloseAutoFocus={(event) => {
            if (returnFocusTo?.current) {
              event.preventDefault();
              returnFocusTo.current.focus();
            }
          }}
        >
          <Title className="dialog__title">{title}</Title>
          <Description className="dialog__description">{consequence}</Description>
          {typeToConfirm !== undefined && (
            <div className="field">
              <label className="field__label" htmlFor={inputId}>
                Type <strong>{typeToConfirm}</strong> to confirm
              </label>
              <input
                id={inputId}
                value={typed}
                onChange={(e) => setTyped(e.target.value)}
                autoComplete="off"
                spellCheck={false}
                data-testid={`${testId}-input`}
              />
            </div>
          )}
          {error !== null && <ErrorPanel error={error} title="That did not work" />}
          <div className="dialog__footer">
            <Cancel asChild>
              <button type="button" className="button">
                {cancelLabel}
              </button>
            </Cancel>
            <Action asChild>
              <button
                type="button"
                className={`button button--${tone}`}
                disabled={!ready || busy}
                data-testid={`${testId}-confirm`}
                onClick={async (event) => {
                  // Stay open until the action settles: Action would close at once.
                  event.preventDefault();
                  setBusy(true);
                  setError(null);
                  try {
                    await onConfirm();
                    change(false);
                  } catch (failure) {
                    setError(failure);
                  } finally {
                    setBusy(false);
                  }
                }}
              >
                {busy ? 'Working…' : confirmLabel}
              </button>
            </Action>
          </div>
        </Content>
      </Portal>
    </Root>
  );
}

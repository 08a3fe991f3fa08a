import { type ReactNode, useRef, useState } from 'react';

type ConfirmButtonProps = {
  /** The button's label, e.g. "Revoke". */
  children: ReactNode;
  /** What the dialog asks, naming the thing: "Revoke the key CI deploy?" */
  question: string;
  /** One sentence on the consequence. */
  consequence?: string;
  confirmLabel?: string;
  /** Runs on confirmation; the dialog closes when it settles. */
  onConfirm: () => unknown;
  disabled?: boolean;
  testId?: string;
  /** `danger` (the default) for what removes or stops something; `primary` for what only adds work, such as a replay. */
  tone?: 'danger' | 'primary';
};

/** Every destructive or consequential action goes through this: a native modal dialog that names the consequence. */
export function ConfirmButton({
  children,
  question,
  consequence,
  confirmLabel = 'Confirm',
  onConfirm,
  disabled,
  testId,
  tone = 'danger',
}: ConfirmButtonProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  return (
    <>
      <button
        type="button"
        className={`button button--${tone}`}
        disabled={disabled}
        data-testid={testId}
        onClick={() => dialog.current?.showModal()}
      >
        {children}
      </button>
      <dialog ref={dialog} className="confirm-dialog" data-testid={testId ? `${testId}-dialog` : 'confirm-dialog'}>
        <p className="confirm-dialog__question">{question}</p>
        {consequence && <p className="muted">{consequence}</p>}
        <div className="confirm-dialog__actions">
          <button type="button" className="button" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
          <button
            type="button"
            className={`button button--${tone}`}
            disabled={busy}
            data-testid="confirm"
            onClick={async () => {
              setBusy(true);
              try {
                await onConfirm();
              } finally {
                setBusy(false);
                dialog.current?.close();
              }
            }}
          >
            {confirmLabel}
          </button>
        </div>
      </dialog>
    </>
  );
}

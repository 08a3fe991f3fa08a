import type { ReactNode } from 'react';
import { CopyButton } from './copy-button.tsx';
import { Dialog } from './dialog.tsx';

type SecretOnceProps = {
  /** What it is: "Secret key", "Invite link". */
  label: string;
  value: string;
  testId?: string;
  /** How svc keeps it, for the warning: a hash by default; webhook secrets are kept encrypted. */
  storedAs?: string;
};

/** A secret the api returns once: shown in full with a copy button and a plain warning. */
export function SecretOnce({ label, value, testId = 'secret-once', storedAs = 'only a hash' }: SecretOnceProps) {
  return (
    <div className="secret-once" data-testid={testId}>
      <p className="secret-once__label">
        {label} <span className="muted">(shown once: copy it now, svc keeps {storedAs})</span>
      </p>
      <div className="secret-once__row">
        <code className="secret-once__value" data-testid={`${testId}-value`}>
          {value}
        </code>
        <CopyButton value={value} testId={`${testId}-copy`} />
      </div>
    </div>
  );
}

type SecretOnceDialogProps = {
  /** What to show, or null while nothing is revealed: the dialog is open exactly while it is set. */
  revealed: { title: string; value: string } | null;
  /** The dialog's only way out ("I have stored it"): the page forgets the secret. */
  onDismiss: () => void;
  /** One sentence under the title: where to put the secret. */
  description: ReactNode;
  /** What the secret is: "Secret key", "Signing secret". */
  label: string;
  /** How svc keeps it (SecretOnce's warning). */
  storedAs?: string;
  /** Non-secret facts shown above the secret (an application's publishable key). */
  children?: ReactNode;
  /** Attributes of the body around the facts and the secret (which record it belongs to). */
  bodyAttributes?: Record<`data-${string}`, string>;
  /** On the dialog. */
  testId: string;
  /**
   * SecretOnce's test id (`<secretTestId>-value`, `-copy`); the dismiss button is
   * `<secretTestId>-dismiss`.
   */
  secretTestId: string;
};

/**
 * A secret the api has just returned (created or rotated), in a dialog that neither Escape nor a
 * click outside closes: only "I have stored it", after which the page drops it for good.
 */
export function SecretOnceDialog({
  revealed,
  onDismiss,
  description,
  label,
  storedAs,
  children,
  bodyAttributes,
  testId,
  secretTestId,
}: SecretOnceDialogProps) {
  return (
    <Dialog
      open={revealed !== null}
      onOpenChange={(open) => !open && onDismiss()}
      title={revealed?.title ?? ''}
      description={description}
      dismissible={false}
      testId={testId}
      footer={
        <button type="button" className="button button--primary" onClick={onDismiss} data-testid={`${secretTestId}-dismiss`}>
          I have stored it
        </button>
      }
    >
      {revealed && (
        <div {...bodyAttributes}>
          {children}
          <SecretOnce label={label} value={revealed.value} testId={secretTestId} storedAs={storedAs} />
        </div>
      )}
    </Dialog>
  );
}

import { CopyButton } from './copy-button.tsx';

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

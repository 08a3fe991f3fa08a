import { type ReactNode, useId } from 'react';

/** Spread on the control inside a Field: the label points at it, the hint and error describe it. */
export type FieldControlProps = {
  id: string;
  'aria-invalid': boolean | undefined;
  'aria-describedby': string | undefined;
};

type FieldProps = {
  /** Names the control: "Name", "Expires". */
  label: ReactNode;
  /** The control, given its props: `{(control) => <input {...control} {...form.register('name')} />}`. */
  children: (control: FieldControlProps) => ReactNode;
  /** The message for this field (react-hook-form's `errors.name?.message`). */
  error?: string;
  /** One line between the label and the control: what to enter. */
  hint?: ReactNode;
  /** Fix the control's id (an empty state's button focuses it); a generated one otherwise. */
  id?: string;
  /** `<testId>-error` on the message while there is one. */
  testId?: string;
};

/**
 * Label (and hint), control, then its error directly under it. The error's line is always
 * reserved, so an error appearing moves nothing on the page.
 */
export function Field({ label, children, error, hint, id, testId }: FieldProps) {
  const generated = useId();
  const controlId = id ?? generated;
  const hintId = `${controlId}-hint`;
  const errorId = `${controlId}-error`;
  const describedBy = [hint ? hintId : undefined, error ? errorId : undefined].filter(Boolean).join(' ');
  return (
    <div className="field">
      <label className="field__label" htmlFor={controlId}>
        {label}
      </label>
      {hint && (
        <p id={hintId} className="field__hint">
          {hint}
        </p>
      )}
      {children({ id: controlId, 'aria-invalid': error ? true : undefined, 'aria-describedby': describedBy || undefined })}
      <p id={errorId} className="field__error" data-testid={error && testId ? `${testId}-error` : undefined}>
        {error}
      </p>
    </div>
  );
}

type FieldSetProps = {
  /** Names the group: "Scopes". */
  legend: ReactNode;
  /** The group's error, shown beside the legend (it is read with the group's name). */
  error?: string;
  children: ReactNode;
  /** On the fieldset; `<testId>-error` on the message while there is one. */
  testId?: string;
};

/** A group of checkboxes or radios under one legend, its error beside the legend. */
export function FieldSet({ legend, error, children, testId }: FieldSetProps) {
  return (
    <fieldset className="fieldset" data-testid={testId}>
      <legend className="fieldset__legend">
        <span>{legend}</span>
        {error && (
          <span className="field__error" data-testid={testId ? `${testId}-error` : undefined}>
            {error}
          </span>
        )}
      </legend>
      {children}
    </fieldset>
  );
}

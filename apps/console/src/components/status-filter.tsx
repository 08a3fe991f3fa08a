import { useId } from 'react';
import type { PagerState } from './pager.tsx';
import { Select } from './select.tsx';

type StatusOption<S extends string> = S | { value: S; label: string };

type StatusFilterProps<S extends string> = {
  /** The trigger's test id, e.g. `invitations-filter-status`; options are `<testId>-option-<value>` (`-option-__any` for no filter). */
  testId: string;
  /** The statuses to pick from, in order; a bare string is its own label. */
  options: readonly StatusOption<S>[];
  /** The chosen status; '' is no filter. */
  value: S | '';
  onChange: (value: S | '') => void;
  label?: string;
  /** The no-filter option's label; null where the list always shows one of the options. */
  anyLabel?: string | null;
  /** Given, a new status starts again at page 1 (the cursor belongs to the old filter). */
  pager?: PagerState;
};

/** Radix keeps '' for "nothing chosen", so "no filter" is this value inside the Select. */
const ANY = '__any';

/** The status filter of a list: "Any" or one status, narrowing the list as soon as it is picked. */
export function StatusFilter<S extends string>({
  testId,
  options,
  value,
  onChange,
  label = 'Status',
  anyLabel = 'Any',
  pager,
}: StatusFilterProps<S>) {
  const id = useId();
  const choices = [
    ...(anyLabel === null ? [] : [{ value: ANY, label: anyLabel }]),
    ...options.map((option) => (typeof option === 'string' ? { value: option, label: option } : option)),
  ];
  return (
    <div className="form-field">
      <label htmlFor={id}>{label}</label>
      <Select
        id={id}
        testId={testId}
        options={choices}
        value={value === '' ? (anyLabel === null ? undefined : ANY) : value}
        onValueChange={(picked) => {
          onChange(picked === ANY ? '' : (picked as S));
          pager?.reset();
        }}
      />
    </div>
  );
}

import type { PagerState } from './pager.tsx';

type StatusOption<S extends string> = S | { value: S; label: string };

type StatusFilterProps<S extends string> = {
  /** The select's test id, e.g. `invitations-filter-status`. */
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

/** The status select of a list: "Any" or one status, narrowing the list as soon as it changes. */
export function StatusFilter<S extends string>({
  testId,
  options,
  value,
  onChange,
  label = 'Status',
  anyLabel = 'Any',
  pager,
}: StatusFilterProps<S>) {
  const choices = options.map((option) => (typeof option === 'string' ? { value: option, label: option } : option));
  return (
    <label className="form-field">
      <span>{label}</span>
      <select
        data-testid={testId}
        value={value}
        onChange={(e) => {
          const picked = choices.find((c) => c.value === e.target.value);
          onChange(picked ? picked.value : '');
          pager?.reset();
        }}
      >
        {anyLabel !== null && <option value="">{anyLabel}</option>}
        {choices.map((c) => (
          <option key={c.value} value={c.value}>
            {c.label}
          </option>
        ))}
      </select>
    </label>
  );
}

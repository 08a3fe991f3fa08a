import { Content, Item, Portal, Root, Trigger } from '@radix-ui/react-dropdown-menu';
import { useId, useRef, useState } from 'react';

export type SelectOption<V extends string> = {
  /** Never '': a word such as 'any' stands for "no filter", so that every option has a value to test by. */
  value: V;
  label: string;
};

type SelectProps<V extends string> = {
  value: V | undefined;
  onValueChange: (value: V) => void;
  options: readonly SelectOption<V>[];
  /** Shown while nothing is chosen. */
  placeholder?: string;
  /** From Field's control props, so the label names it and the error describes it. */
  id?: string;
  'aria-invalid'?: boolean;
  'aria-describedby'?: string;
  /** Its accessible name when it stands outside a Field (a filter in a toolbar). */
  'aria-label'?: string;
  disabled?: boolean;
  /** On the trigger button; each option is `<testId>-option-<value>`. */
  testId?: string;
  /** On the label of the chosen option shown in the trigger, where a test reads what is chosen. */
  valueTestId?: string;
};

function focusOnMount(element: HTMLDivElement | null): void {
  element?.focus({ preventScroll: true });
}

/**
 * A styled, keyboard-usable select: a button (role combobox) that opens a listbox of the options;
 * Space, Enter and the down arrow open it, the arrows move through it, typeahead finds an option,
 * Escape closes it. Put it in a Field and spread the control props on it, like any input.
 *
 * Built on Radix's dropdown menu, not on Radix Select: Select is always modal, and while open it
 * hides the rest of the page from assistive technology with aria-hidden while the page's links and
 * buttons stay focusable (axe `aria-hidden-focus`); it has no mode without that. The menu, not
 * modal, leaves the page alone (as a row's "⋯" menu does) and gives the same keyboard behaviour;
 * its parts carry the listbox roles, which is what a select is to a screen reader.
 */
export function Select<V extends string>({
  value,
  onValueChange,
  options,
  placeholder,
  testId,
  valueTestId,
  disabled,
  id,
  ...aria
}: SelectProps<V>) {
  const generatedId = useId();
  const triggerId = id ?? generatedId;
  const listboxId = `${triggerId}-listbox`;
  const trigger = useRef<HTMLButtonElement>(null);
  const [open, setOpen] = useState(false);
  // The listbox is named as its trigger is: by aria-label, or by the Field's <label>.
  const [listName, setListName] = useState<string | undefined>(undefined);
  const chosen = options.find((option) => option.value === value);
  return (
    <Root
      open={open}
      onOpenChange={(next) => {
        if (next) {
          setListName(aria['aria-label'] ?? trigger.current?.labels?.[0]?.textContent?.trim() ?? undefined);
        }
        setOpen(next);
      }}
      modal={false}
    >
      <Trigger
        ref={trigger}
        id={triggerId}
        role="combobox"
        aria-haspopup="listbox"
        aria-controls={open ? listboxId : undefined}
        className="select__trigger"
        data-testid={testId}
        data-placeholder={chosen ? undefined : ''}
        disabled={disabled}
        {...aria}
      >
        <span data-testid={valueTestId} title={chosen?.label}>
          {chosen ? chosen.label : placeholder}
        </span>
        <span aria-hidden="true">▾</span>
      </Trigger>
      <Portal>
        <Content
          id={listboxId}
          role="listbox"
          aria-label={listName}
          aria-labelledby={undefined}
          className="select__content"
          align="start"
          sideOffset={4}
        >
          {options.map((option) => (
            <Item
              key={option.value}
              role="option"
              aria-selected={option.value === value}
              className="select__item"
              data-testid={testId ? `${testId}-option-${option.value}` : undefined}
              textValue={option.label}
              onSelect={() => onValueChange(option.value)}
              // The chosen option has the focus on opening, as in a native select (the menu would
              // focus the list itself after a click, its first item after a key): focused as it
              // mounts, the focus is already inside the list when the menu's own autofocus runs.
              ref={option.value === value ? focusOnMount : undefined}
            >
              {option.value === value && (
                <span className="select__indicator" aria-hidden="true">
                  ✓
                </span>
              )}
              <span>{option.label}</span>
            </Item>
          ))}
        </Content>
      </Portal>
    </Root>
  );
}

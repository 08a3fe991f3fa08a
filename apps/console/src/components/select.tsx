import { Content, Icon, Item, ItemIndicator, ItemText, Portal, Root, Trigger, Value, Viewport } from '@radix-ui/react-select';

export type SelectOption<V extends string> = {
  /** Never '': Radix keeps the empty string for "nothing chosen". Use a word such as 'any'. */
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

/**
 * A styled, keyboard-usable select (Radix): Space/Enter/arrows open it, typeahead finds an option.
 * Put it in a Field and spread the control props on it, like any input.
 */
export function Select<V extends string>({
  value,
  onValueChange,
  options,
  placeholder,
  testId,
  valueTestId,
  disabled,
  ...aria
}: SelectProps<V>) {
  return (
    <Root
      value={value}
      onValueChange={(next) => {
        const picked = options.find((option) => option.value === next);
        if (picked) {
          onValueChange(picked.value);
        }
      }}
      disabled={disabled}
    >
      <Trigger className="select__trigger" data-testid={testId} {...aria}>
        <Value placeholder={placeholder} data-testid={valueTestId} />
        <Icon aria-hidden="true">▾</Icon>
      </Trigger>
      <Portal>
        <Content className="select__content" position="popper" sideOffset={4}>
          <Viewport>
            {options.map((option) => (
              <Item
                key={option.value}
                value={option.value}
                className="select__item"
                data-testid={testId ? `${testId}-option-${option.value}` : undefined}
              >
                <ItemIndicator className="select__indicator">✓</ItemIndicator>
                <ItemText>{option.label}</ItemText>
              </Item>
            ))}
          </Viewport>
        </Content>
      </Portal>
    </Root>
  );
}

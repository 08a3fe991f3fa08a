import { Content, Item, Portal, Root, Separator, Trigger } from '@radix-ui/react-dropdown-menu';
import { useRef, useState } from 'react';
import { ConfirmDialog, type ConfirmDialogProps } from './confirm-dialog.tsx';

export type RowAction = {
  /** The menu item, a verb and the record: "Rotate…", "Revoke key…" ("…" when a dialog follows). */
  label: string;
  /** Removes or stops something: listed last, after a separator, in the danger colour. */
  destructive?: boolean;
  disabled?: boolean;
  testId?: string;
} & (
  | {
      /** Runs on select, e.g. opens the page's edit FormDialog. */
      onSelect: () => void;
      confirm?: undefined;
    }
  | {
      onSelect?: undefined;
      /** Asks first in a ConfirmDialog; `onConfirm` runs after the admin confirms. */
      confirm: Omit<ConfirmDialogProps, 'open' | 'onOpenChange' | 'returnFocusTo'>;
    }
);

type RowActionsProps = {
  /** The record's name, for the button's accessible name: "Actions for CI deploy". */
  name: string;
  actions: RowAction[];
  /** On the "⋯" button; the menu is `<testId>-menu`. */
  testId?: string;
};

/**
 * One "⋯" menu button per table row (Radix dropdown menu: arrow keys, Escape, typeahead), in a
 * DataTable column of its own. Destructive actions come last, after a separator; an action with
 * `confirm` opens a ConfirmDialog, and focus comes back to this button when it closes.
 */
export function RowActions({ name, actions, testId }: RowActionsProps) {
  const button = useRef<HTMLButtonElement>(null);
  const [confirming, setConfirming] = useState<RowAction | null>(null);
  const [open, setOpen] = useState(false);
  const safe = actions.filter((action) => !action.destructive);
  const destructive = actions.filter((action) => action.destructive);
  const item = (action: RowAction) => (
    <Item
      key={action.label}
      className={action.destructive ? 'menu__item menu__item--danger' : 'menu__item'}
      disabled={action.disabled}
      data-testid={action.testId}
      onSelect={() => {
        if (action.confirm) {
          setConfirming(action);
        } else {
          action.onSelect();
        }
      }}
    >
      {action.label}
    </Item>
  );
  return (
    <>
      {/*
        Not modal: the page stays readable to assistive technology while the menu is open (a modal
        menu hides it with aria-hidden while its focusable parts remain); Escape, a click outside
        and Tab still close it.
      */}
      <Root open={open} onOpenChange={setOpen} modal={false}>
        <Trigger asChild>
          <button ref={button} type="button" className="button button--icon" aria-label={`Actions for ${name}`} data-testid={testId}>
            <span aria-hidden="true">⋯</span>
          </button>
        </Trigger>
        <Portal>
          <Content
            className="menu"
            align="end"
            sideOffset={4}
            data-testid={testId ? `${testId}-menu` : undefined}
            // A confirmation takes the focus next; the dialog gives it back to the button.
            onCloseAutoFocus={(event) => {
              if (confirming) {
                event.preventDefault();
              }
            }}
          >
            {safe.map(item)}
            {safe.length > 0 && destructive.length > 0 && <Separator className="menu__separator" />}
            {destructive.map(item)}
          </Content>
        </Portal>
      </Root>
      {confirming?.confirm && (
        <ConfirmDialog
          {...confirming.confirm}
          open
          onOpenChange={(next) => {
            if (!next) {
              setConfirming(null);
            }
          }}
          returnFocusTo={button}
        />
      )}
    </>
  );
}

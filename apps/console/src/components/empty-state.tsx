import type { ReactNode } from 'react';

export type EmptyStateProps = {
  /** What is (not) there, one sentence, e.g. "No invitations yet." or "No revoked invitations." */
  title: string;
  /** What to do next, one sentence. */
  next: ReactNode;
  /** The page's own action for it as a button: focus the create form, clear the filter, open the page that fills this one. */
  action?: { label: string; onClick: () => void };
};

/** An empty list, said plainly, with the next step (and its button where the page has one). */
export function EmptyState({ title, next, action, testId }: EmptyStateProps & { testId: string }) {
  return (
    <div className="empty-state" data-testid={testId}>
      <p className="empty-state__title" data-testid={`${testId}-title`}>
        {title}
      </p>
      <p className="empty-state__description" data-testid={`${testId}-next`}>
        {next}
      </p>
      {action && (
        <button
          type="button"
          className="button button--primary empty-state__action"
          onClick={action.onClick}
          data-testid={`${testId}-action`}
        >
          {action.label}
        </button>
      )}
    </div>
  );
}

/**
 * An empty state's action that takes the admin to the page's own form: the field with this id is
 * scrolled to and focused.
 */
export function focusField(id: string): () => void {
  return () => {
    const field = document.getElementById(id);
    field?.scrollIntoView({ block: 'center' });
    field?.focus();
  };
}

import type { ReactNode } from 'react';

type PageHeaderProps = {
  title: string;
  description?: string;
  /** The description is not known yet (it depends on the workspace): a one-line skeleton in its place. */
  descriptionPending?: boolean;
  actions?: ReactNode;
};

/** Page heading; React 19 hoists the <title> into <head>. */
export function PageHeader({ title, description, descriptionPending, actions }: PageHeaderProps) {
  return (
    <header className="page-header">
      <title>{`${title} · svc console`}</title>
      <div>
        <h1 className="page-header__title">{title}</h1>
        {description && <p className="page-header__description">{description}</p>}
        {!description && descriptionPending && (
          <p className="page-header__description" data-testid="page-description-pending" aria-hidden="true">
            <span className="skeleton__bar" style={{ display: 'inline-block', width: '24rem', maxWidth: '100%', margin: 0 }} />
          </p>
        )}
      </div>
      {actions && <div className="page-header__actions">{actions}</div>}
    </header>
  );
}

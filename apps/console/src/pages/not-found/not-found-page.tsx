import { Link, useLocation } from 'react-router';
import { PageHeader } from '../../components/page-header.tsx';

/** Unknown path inside the console: the api served the SPA, the router found no page. */
export function NotFoundPage() {
  const location = useLocation();
  return (
    <div data-testid="not-found">
      <PageHeader title="Page not found" />
      <div className="empty-state">
        <p className="empty-state__title">
          There is no console page at <code data-testid="not-found-path">{location.pathname}</code>.
        </p>
        <p className="empty-state__description">
          <Link to="/">Go to the overview</Link>
        </p>
      </div>
    </div>
  );
}

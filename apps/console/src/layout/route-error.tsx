import { useRouteError } from 'react-router';
import { ErrorPanel } from '../components/error-panel.tsx';

/**
 * The layout-level error boundary: a page that throws while rendering shows this inside the shell,
 * so the navigation stays usable.
 */
export function RouteError() {
  const error = useRouteError();
  return (
    <div data-testid="route-error">
      <ErrorPanel error={error} title="This page failed to load" onRetry={() => window.location.reload()} />
    </div>
  );
}

/** Last resort when the layout itself fails: no shell to render into, so a bare page. */
export function RootError() {
  const error = useRouteError();
  return (
    <div className="root-error" data-testid="root-error">
      <ErrorPanel error={error} title="The console failed to load" onRetry={() => window.location.reload()} />
    </div>
  );
}

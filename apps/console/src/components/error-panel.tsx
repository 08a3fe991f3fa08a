import { type ParsedError, parseError } from '../lib/errors.ts';
import { signInHref } from '../lib/session.ts';

type ErrorPanelProps = {
  /** Anything thrown or returned as an error; it is parsed here, once. */
  error: unknown;
  title?: string;
  /** Offered as a "Try again" button when given. */
  onRetry?: () => void;
};

/** Shows code, message and request id of a failure, the same way everywhere in the console. */
export function ErrorPanel({ error, title = 'Something went wrong', onRetry }: ErrorPanelProps) {
  const parsed: ParsedError = parseError(error);
  return (
    <section className="error-panel" role="alert" data-testid="error-panel">
      <h2 className="error-panel__title">{title}</h2>
      <p className="error-panel__message" data-testid="error-message">
        {parsed.message}
      </p>
      <dl className="error-panel__facts">
        <dt>Code</dt>
        <dd>
          <code data-testid="error-code">{parsed.code}</code>
        </dd>
        {parsed.httpStatus !== undefined && (
          <>
            <dt>HTTP status</dt>
            <dd>{parsed.httpStatus}</dd>
          </>
        )}
        <dt>Request id</dt>
        <dd>
          {parsed.requestId ? <code data-testid="error-request-id">{parsed.requestId}</code> : <span className="muted">not available</span>}
        </dd>
      </dl>
      <div className="error-panel__actions">
        {parsed.code === 'unauthenticated' && (
          <a className="button button--primary" href={signInHref()}>
            Sign in
          </a>
        )}
        {onRetry && (
          <button type="button" className="button" onClick={onRetry}>
            Try again
          </button>
        )}
      </div>
    </section>
  );
}

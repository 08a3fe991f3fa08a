import { Link } from 'react-router';
import { type ParsedError, parseError } from '../lib/errors.ts';
import { signInHref } from '../lib/session.ts';

type ErrorPanelProps = {
  /** Anything thrown or returned as an error; it is parsed here, once. */
  error: unknown;
  title?: string;
  /** Offered as a "Try again" button when given (not on a 403: asking again changes nothing). */
  onRetry?: () => void;
  /**
   * What a 403 means on this page and who can help: the page's own words in place of the title
   * (e.g. a platform-only page opened by an organization's admin).
   */
  forbidden?: { title: string; help: string };
};

/**
 * 402 is the subscription rule (docs/api.md "The 402 rule"), never a bug or a payment form: what each code means
 * for the admin, and what they can do about it.
 */
const SUBSCRIPTION_PROBLEMS: Record<string, { headline: string; help: string }> = {
  subscription_inactive: {
    headline: "the organization's subscription is not active",
    help: "While it is inactive, cancelled or expired, svc refuses changes to the organization's applications, users, webhooks and usage; everything can still be read. A platform admin can reactivate it on the Subscription page.",
  },
  subscription_limit_exceeded: {
    headline: "the organization is over its plan's limits",
    help: "Over its seats or this month's usage limit, svc refuses changes to the organization's applications, users, webhooks and usage; everything can still be read. Remove members, or ask a platform admin for more seats or another plan. The Subscription page shows which limit.",
  },
};

function subscriptionProblem(parsed: ParsedError): { headline: string; help: string } | undefined {
  if (parsed.httpStatus !== 402 && !(parsed.code in SUBSCRIPTION_PROBLEMS)) {
    return undefined;
  }
  return (
    SUBSCRIPTION_PROBLEMS[parsed.code] ?? {
      headline: "the organization's subscription does not allow this",
      help: 'The Subscription page shows its plan, status and limits; a platform admin can change them.',
    }
  );
}

/** Shows code, message and request id of a failure, the same way everywhere in the console. */
export function ErrorPanel({ error, title = 'Something went wrong', onRetry, forbidden }: ErrorPanelProps) {
  const parsed: ParsedError = parseError(error);
  const subscription = subscriptionProblem(parsed);
  const refused = parsed.code === 'forbidden' || parsed.httpStatus === 403;
  return (
    <section className="error-panel" role="alert" data-testid="error-panel" data-subscription-problem={subscription ? 'true' : undefined}>
      <h2 className="error-panel__title">{refused && forbidden ? forbidden.title : title}</h2>
      {refused && (
        <p data-testid="error-forbidden-help">
          {forbidden?.help ?? 'Your role does not allow this here. An admin of this organization can give you a role that does.'}
        </p>
      )}
      {subscription && (
        <div
          data-testid="error-subscription"
          style={{
            margin: '8px 0 12px',
            padding: '10px 12px',
            background: 'var(--surface)',
            border: '1px solid var(--danger-border)',
            borderRadius: 6,
          }}
        >
          <strong data-testid="error-subscription-headline">Subscription problem: {subscription.headline}</strong>
          <p style={{ margin: '4px 0 8px' }} data-testid="error-subscription-help">
            {subscription.help}
          </p>
          <Link className="button" to="/subscription" data-testid="error-subscription-link">
            Open the Subscription page
          </Link>
        </div>
      )}
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
        {onRetry && !refused && (
          <button type="button" className="button" onClick={onRetry}>
            Try again
          </button>
        )}
      </div>
    </section>
  );
}

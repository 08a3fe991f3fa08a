import { Link } from 'react-router';

/**
 * The line under the SSO connections, Directory sync and Domains pages' headers: the customer's
 * IT admin can do this themselves through a setup link (docs/enterprise.md "Setup links").
 */
export function SetupLinkHint({ what }: { what: string }) {
  return (
    <p className="muted" data-testid="setup-link-hint">
      Someone else runs {what}? <Link to="/settings/setup-links">Send them a setup link</Link>: they set it up on a page of its own, without
      a console account.
    </p>
  );
}

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { Select } from '../components/select.tsx';
import { Skeleton } from '../components/skeleton.tsx';
import { parseError } from '../lib/errors.ts';
import { useTRPC } from '../trpc.ts';

/** How many organizations a platform admin's switcher lists; the rest are one option away, on Organizations. */
const PLATFORM_SWITCHER_SIZE = 50;

/** The switcher's last option for a platform admin: the Organizations page, to search all of them. */
const ALL_ORGANIZATIONS = '__all_organizations';

/**
 * Who is signed in and in which workspace, from the live `me.get` query, and the way out. An
 * `unauthenticated` answer (the session ended while the page was open) is handled once for every
 * query in app.tsx: the browser goes to hosted sign-in.
 */
export function SessionBar() {
  const trpc = useTRPC();
  // Re-checked whenever the tab regains focus: signing out in another tab is noticed here.
  const me = useQuery(trpc.me.get.queryOptions(undefined, { staleTime: 0, refetchOnWindowFocus: true }));
  const failure = me.isError ? parseError(me.error) : undefined;
  const queryClient = useQueryClient();
  // Every page reads the active workspace: after a switch, everything is fetched again.
  const switchWorkspace = useMutation(trpc.me.switchWorkspace.mutationOptions({ onSuccess: () => queryClient.invalidateQueries() }));
  const switchFailure = switchWorkspace.isError ? parseError(switchWorkspace.error) : undefined;
  const navigate = useNavigate();
  const isPlatformAdmin = me.data?.isPlatformAdmin === true;
  // A platform admin may act in any organization, not only their own: the newest ones are offered
  // beside their memberships, as a tenant admin's memberships are (the API lists them all to them only).
  const organizations = useQuery(trpc.tenants.list.queryOptions({ limit: PLATFORM_SWITCHER_SIZE }, { enabled: isPlatformAdmin }));
  const choices = me.data ? me.data.memberships.map((m) => m.organization) : [];
  for (const organization of isPlatformAdmin ? (organizations.data?.data ?? []) : []) {
    if (!choices.some((c) => c.slug === organization.slug)) {
      choices.push(organization);
    }
  }
  const activeSlug = me.data?.activeWorkspace?.slug;
  if (activeSlug && me.data?.activeWorkspace && !choices.some((c) => c.slug === activeSlug)) {
    // A platform admin acting in an organization that is neither theirs nor among the newest.
    choices.unshift(me.data.activeWorkspace);
  }
  const options = choices.map((c) => ({ value: c.slug, label: c.name }));
  if (isPlatformAdmin && organizations.data?.nextCursor) {
    options.push({ value: ALL_ORGANIZATIONS, label: 'All organizations…' });
  }

  return (
    <div className="session" data-testid="session">
      {me.isPending && <Skeleton label="Loading your account…" testId="session-loading" lines={1} />}
      {failure && failure.code !== 'unauthenticated' && (
        <span className="session__error" data-testid="session-error" title={failure.message}>
          Account unavailable (<code>{failure.code}</code>)
        </span>
      )}
      {me.data && (
        <>
          <span className="session__workspace" data-testid="workspace">
            {me.data.activeWorkspace ? (
              <>
                {options.length > 1 ? (
                  // The name is the switcher: the active workspace is the chosen option (✓ in the list).
                  <Select
                    aria-label="Switch workspace"
                    testId="workspace-select"
                    valueTestId="workspace-name"
                    value={activeSlug}
                    options={options}
                    disabled={switchWorkspace.isPending}
                    onValueChange={(slug) =>
                      slug === ALL_ORGANIZATIONS ? void navigate('/organizations') : switchWorkspace.mutate({ organization_slug: slug })
                    }
                  />
                ) : (
                  <span className="session__workspace-name" data-testid="workspace-name">
                    {me.data.activeWorkspace.name}
                  </span>
                )}
                <span className="session__kind" data-testid="workspace-kind">
                  {me.data.activeWorkspace.kind}
                </span>
              </>
            ) : (
              <span className="muted" data-testid="workspace-name">
                No workspace
              </span>
            )}
            {switchFailure && (
              <span className="session__error" data-testid="workspace-switch-error" title={switchFailure.message}>
                Could not switch (<code>{switchFailure.code}</code>)
              </span>
            )}
          </span>
          {me.data.isPlatformAdmin && (
            <span className="badge" data-testid="platform-admin-badge">
              Platform admin
            </span>
          )}
          <a className="session__who" href="/user" data-testid="whoami" title="Your account">
            <span className="session__name" data-testid="whoami-name">
              {me.data.user.name}
            </span>
            <span className="session__email" data-testid="whoami-email">
              {me.data.user.email}
            </span>
          </a>
        </>
      )}
      {/* The confirmation page POSTs /auth/logout from our own origin (the api checks it). */}
      <a className="button" href="/auth/logout" data-testid="sign-out">
        Sign out
      </a>
    </div>
  );
}

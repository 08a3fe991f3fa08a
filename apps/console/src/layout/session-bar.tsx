import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Select } from '../components/select.tsx';
import { Skeleton } from '../components/skeleton.tsx';
import { parseError } from '../lib/errors.ts';
import { useTRPC } from '../trpc.ts';

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
  const choices = me.data ? me.data.memberships.map((m) => m.organization) : [];
  const activeSlug = me.data?.activeWorkspace?.slug;
  if (activeSlug && me.data?.activeWorkspace && !choices.some((c) => c.slug === activeSlug)) {
    // A platform admin acting in an organization they are not a member of.
    choices.unshift(me.data.activeWorkspace);
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
                {choices.length > 1 ? (
                  // The name is the switcher: the active workspace is the chosen option (✓ in the list).
                  <Select
                    aria-label="Switch workspace"
                    testId="workspace-select"
                    valueTestId="workspace-name"
                    value={activeSlug}
                    options={choices.map((c) => ({ value: c.slug, label: c.name }))}
                    disabled={switchWorkspace.isPending}
                    onValueChange={(slug) => switchWorkspace.mutate({ organization_slug: slug })}
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

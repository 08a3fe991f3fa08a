import { useQuery } from '@tanstack/react-query';
import { useTRPC } from '../trpc.ts';

/**
 * The organization the console acts on: the session's active workspace (from `me.get`, which the
 * header already loads). Pages pass its slug as `organization_slug` or its id in paths.
 */
export function useActiveOrganization() {
  const trpc = useTRPC();
  const me = useQuery(trpc.me.get.queryOptions());
  return { organization: me.data?.activeWorkspace ?? null, me: me.data, isLoading: me.isLoading, error: me.error };
}

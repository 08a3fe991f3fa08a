import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { toast } from 'sonner';
import { useTRPC } from '../trpc.ts';
import { parseError } from './errors.ts';

/**
 * The organization the console acts on: the session's active workspace (from `me.get`, which the
 * header already loads). Pages pass its slug as `organization_slug` or its id in paths.
 */
export function useActiveOrganization() {
  const trpc = useTRPC();
  const me = useQuery(trpc.me.get.queryOptions());
  return { organization: me.data?.activeWorkspace ?? null, me: me.data, isLoading: me.isLoading, error: me.error };
}

/**
 * Makes `slug` the session's active workspace (a platform admin may pick any organization) and
 * refetches everything, since every page reads the active workspace; then shows its Overview.
 */
export function useOpenOrganization() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const switchWorkspace = useMutation(trpc.me.switchWorkspace.mutationOptions({ onSuccess: () => queryClient.invalidateQueries() }));
  return async (slug: string) => {
    try {
      await switchWorkspace.mutateAsync({ organization_slug: slug });
      await navigate('/');
    } catch (error) {
      toast.error(`Could not open the organization: ${parseError(error).message}`);
    }
  };
}

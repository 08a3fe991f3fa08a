import type { TApiResource } from '@svc/contracts/authorization';
import { useQuery } from '@tanstack/react-query';
import type { PermissionGroup } from '../components/permission-groups.tsx';
import { useTRPC } from '../trpc.ts';

/** How many API resources a permission picker reads: one page, the API's largest. */
export const CATALOG_LIMIT = 200;

/**
 * The product's API resources with their permissions (docs/authorization.md), as the role editors
 * offer them. Reading it needs roles.read in the organization `slug` names, or a platform admin.
 */
export function useProductCatalog(slug: string | undefined) {
  const trpc = useTRPC();
  return useQuery(
    trpc.authorization.resource.list.queryOptions({ organization_slug: slug, limit: CATALOG_LIMIT }, { enabled: slug !== undefined }),
  );
}

/**
 * The product's permissions grouped by API resource (by name), for PermissionGroups. A resource
 * without permissions has nothing to pick and is left out. `grantable` says which names the admin
 * may hand out; the others are shown, disabled, with a note.
 */
export function productPermissionGroups(resources: readonly TApiResource[], grantable?: (name: string) => boolean): PermissionGroup[] {
  return resources
    .filter((resource) => resource.permissions.length > 0)
    .toSorted((a, b) => a.name.localeCompare(b.name))
    .map((resource) => ({
      id: resource.id,
      name: resource.name,
      title: resource.identifier,
      permissions: resource.permissions.map((permission) => {
        const allowed = grantable === undefined || grantable(permission.name);
        return {
          name: permission.name,
          description: permission.description,
          disabled: !allowed,
          note: allowed ? undefined : '(your role does not hold it)',
        };
      }),
    }));
}

/**
 * The product permissions the signed-in person may put in a custom role of the organization `slug`:
 * `all` for a platform admin, else those their own role there holds (the API refuses the others
 * with 403). Undefined until known, or when their role is not among the organization's first 200.
 */
export function useHeldProductPermissions(slug: string | undefined): 'all' | ReadonlySet<string> | undefined {
  const trpc = useTRPC();
  const me = useQuery(trpc.me.get.queryOptions());
  const isPlatformAdmin = me.data?.isPlatformAdmin;
  // The same query as the role pickers' (lib/roles.ts): one request for both.
  const roles = useQuery(
    trpc.roles.list.queryOptions({ organization_slug: slug, limit: 200 }, { enabled: slug !== undefined && isPlatformAdmin === false }),
  );
  if (isPlatformAdmin) {
    return 'all';
  }
  const roleKey = me.data?.memberships.find((membership) => membership.organization.slug === slug)?.roleKey;
  const role = roles.data?.data.find((r) => r.key === roleKey);
  return role ? new Set(role.productPermissions) : undefined;
}

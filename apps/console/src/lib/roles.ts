import { SYSTEM_ROLES } from '@svc/contracts/permissions';
import { useQuery } from '@tanstack/react-query';
import type { SelectOption } from '../components/select.tsx';
import { useTRPC } from '../trpc.ts';

/** The roles every organization has, until the organization's list arrives. */
const BUILT_IN: SelectOption<string>[] = Object.entries(SYSTEM_ROLES).map(([key, role]) => ({ value: key, label: role.name }));

/**
 * The roles of an organization as role pickers offer them: the key as the value, the role's name
 * as the label ("Admin", "Billing analyst"), and `nameOf(key)` for showing a held role by name.
 */
export function useRoleOptions(slug: string | undefined) {
  const trpc = useTRPC();
  const roles = useQuery(trpc.roles.list.queryOptions({ organization_slug: slug, limit: 200 }, { enabled: slug !== undefined }));
  const options: SelectOption<string>[] = roles.data ? roles.data.data.map((role) => ({ value: role.key, label: role.name })) : BUILT_IN;
  const nameOf = (key: string) => options.find((option) => option.value === key)?.label ?? key;
  return { options, nameOf };
}

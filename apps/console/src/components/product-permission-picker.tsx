import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { productPermissionGroups, useProductCatalog } from '../lib/product-catalog.ts';
import { PermissionGroups } from './permission-groups.tsx';

type ProductPermissionPickerProps = {
  /** The organization whose roles.read lets the admin read the catalog (a platform admin needs none). */
  slug: string | undefined;
  value: readonly string[];
  onChange: (next: string[]) => void;
  error?: string;
  /** Which permissions the admin may hand out; undefined: all (the API has the last word). */
  grantable?: (name: string) => boolean;
  legend?: ReactNode;
  hint?: ReactNode;
  /** As PermissionGroups: `<testId>-<permission>`, `<testId>-group-<resource id>`. */
  testId: string;
};

/**
 * The product's permissions (docs/authorization.md), grouped by API resource with a "select all"
 * per resource: the product roles' editor and the custom roles' editor pick from it.
 */
export function ProductPermissionPicker({
  slug,
  value,
  onChange,
  error,
  grantable,
  legend = 'Your product’s permissions',
  hint,
  testId,
}: ProductPermissionPickerProps) {
  const catalog = useProductCatalog(slug);
  const more = catalog.data?.nextCursor !== null && catalog.data?.nextCursor !== undefined;
  return (
    <PermissionGroups
      legend={legend}
      hint={
        hint || more ? (
          <>
            {hint}
            {more && ' Only the first 200 APIs are listed.'}
          </>
        ) : undefined
      }
      groups={catalog.data ? productPermissionGroups(catalog.data.data, grantable) : []}
      value={value}
      onChange={onChange}
      error={error}
      loading={catalog.isPending && slug !== undefined}
      loadError={catalog.error}
      empty={
        <>
          No API of the product declares permissions yet: platform admins declare them on the{' '}
          <Link to="/authorization/resources">API resources</Link> page.
        </>
      }
      testId={testId}
    />
  );
}

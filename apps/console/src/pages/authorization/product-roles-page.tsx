import type { TProductRole } from '@svc/contracts/authorization';
import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { Link, useParams } from 'react-router';
import { toast } from 'sonner';
import { Chips } from '../../components/chips.tsx';
import { actionsColumn, columnHelper, whenColumn } from '../../components/data-table.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { parseError } from '../../lib/errors.ts';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC, useTRPCClient } from '../../trpc.ts';
import { useInvalidateCatalog } from './api-resource-dialogs.tsx';
import { CreateProductRoleDialog, EditProductRoleDialog } from './product-role-dialogs.tsx';

const PAGE_SIZE = 50;

/** A product role's own page, by its key (what memberships name, stable across renames). */
function productRolePath(key: string): string {
  return `/authorization/product-roles/${encodeURIComponent(key)}`;
}

/**
 * The columns: the role's name (a Built in badge; its description under it) takes what the sized
 * ones leave; the key, which memberships name; its product permissions as chips; when it last
 * changed; and, for platform admins, the row's menu.
 */
function productRoleColumns(onEdit: ((role: TProductRole) => void) | null) {
  const column = columnHelper<TProductRole>();
  return column.columns([
    column.accessor('name', {
      header: 'Role',
      sortFn: 'text',
      cell: (info) => {
        const role = info.row.original;
        return (
          <div className="stack">
            <span title={role.name}>
              <Link to={productRolePath(role.key)} data-testid="product-role-name">
                {role.name}
              </Link>{' '}
              {role.builtin && (
                <span
                  className="badge"
                  data-testid="product-role-builtin"
                  title="Built in: every organization has it, with all of svc's console permissions (org_admin) or its read permissions (org_member); you choose its product permissions"
                >
                  Built in
                </span>
              )}
            </span>
            {role.description && (
              <span className="muted" title={role.description} data-testid="product-role-description">
                {role.description}
              </span>
            )}
          </div>
        );
      },
    }),
    column.accessor('key', {
      header: 'Key',
      sortFn: 'text',
      meta: { width: '13rem', description: 'What memberships and invitations name' },
      cell: (info) => <Identifier value={info.getValue()} label="role key" testId="product-role-key" />,
    }),
    column.accessor((role) => role.permissions.join(' '), {
      id: 'permissions',
      header: 'Product permissions',
      enableSorting: false,
      meta: { width: '36%' },
      cell: (info) => {
        const permissions = info.row.original.permissions;
        return <Chips names={permissions} testId="product-role-permissions" />;
      },
    }),
    whenColumn(column, 'updatedAt', 'Changed'),
    ...(onEdit ? [actionsColumn(column, (role) => <ProductRoleActions role={role} onEdit={onEdit} />)] : []),
  ]);
}

/**
 * Product roles (docs/authorization.md): the roles every organization has in the product, beside
 * its own custom roles. The two built-in rows say which product permissions org_admin and
 * org_member carry; the platform's own roles (created, renamed, deleted here) are assigned like any
 * role. Platform admins change them; whoever holds roles.read in the organization reads them.
 */
export function ProductRolesPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const pager = usePager();
  const slug = active.organization?.slug;
  const isPlatformAdmin = active.me?.isPlatformAdmin === true;
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<TProductRole | null>(null);
  const roles = useQuery({
    ...trpc.authorization.productRole.list.queryOptions(
      { organization_slug: slug, limit: PAGE_SIZE, cursor: pager.cursor },
      { enabled: slug !== undefined },
    ),
    placeholderData: keepPreviousData,
  });
  // Whether the account is a platform admin is known once `me` has loaded: the menu column follows it.
  const columns = useMemo(() => productRoleColumns(isPlatformAdmin ? setEditing : null), [isPlatformAdmin]);
  const selected = useParams().key ?? null;

  return (
    <div data-testid="page-product-roles">
      <PageHeader
        title="Product roles"
        description="Roles every organization has in your product, with the product permissions they grant. Give one to a member or an invitation like any role; the built-in rows set what organization admins and members hold."
        actions={
          isPlatformAdmin &&
          slug && <CreateProductRoleDialog slug={slug} open={creating} onOpenChange={setCreating} onCreated={pager.reset} />
        }
      />
      {active.me && !isPlatformAdmin && (
        <p className="muted" data-testid="product-roles-read-only">
          Only platform admins change product roles. Your organization’s own roles are on the <Link to="/roles">Roles</Link> page.
        </p>
      )}
      {editing && slug && <EditProductRoleDialog key={editing.id} role={editing} slug={slug} onClose={() => setEditing(null)} />}
      {selected ? (
        <ProductRoleDetail roleKey={selected} slug={slug} onEdit={isPlatformAdmin ? setEditing : null} />
      ) : (
        <ListPage
          testId="product-roles"
          noun="product roles"
          workspace={active}
          query={roles}
          pager={pager}
          empty={{ title: 'No product roles yet.', next: 'Create one from the permissions your APIs declare.' }}
          rowKey={(role) => role.id}
          table={{
            columns,
            rowAttributes: (role) => ({
              'data-testid': 'product-role-row',
              'data-role-key': role.key,
              'data-builtin': String(role.builtin),
            }),
            minWidth: '56rem',
          }}
        />
      )}
    </div>
  );
}

/** How many product roles the detail reads per request while looking for its key. */
const LOOKUP_PAGE = 200;

/**
 * One product role on its own page (/authorization/product-roles/<key>): its description, every
 * product permission (the table shows as many as fit), and the same menu as its row for platform
 * admins. The API lists product roles only, so the page reads the list until the key turns up (a
 * catalog of a few roles is one request).
 */
function ProductRoleDetail({
  roleKey,
  slug,
  onEdit,
}: {
  roleKey: string;
  slug: string | undefined;
  onEdit: ((role: TProductRole) => void) | null;
}) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const role = useQuery({
    // Under the list's key, so that the catalog's invalidation after an edit or delete refreshes it too.
    queryKey: [...trpc.authorization.productRole.list.pathKey(), { detail: roleKey, slug }],
    enabled: slug !== undefined,
    queryFn: async () => {
      let cursor: string | undefined;
      do {
        const page = await client.authorization.productRole.list.query({ organization_slug: slug, limit: LOOKUP_PAGE, cursor });
        const found = page.data.find((r) => r.key === roleKey);
        if (found) {
          return found;
        }
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      return null;
    },
  });
  const data = role.data;
  return (
    <>
      <p className="breadcrumb">
        <Link to="/authorization/product-roles" data-testid="product-role-detail-back">
          ← Product roles
        </Link>
      </p>
      {role.isError && <ErrorPanel error={role.error} title="Could not load the product role" onRetry={() => void role.refetch()} />}
      {(slug === undefined || role.isPending) && !role.isError && (
        <Skeleton label="Loading the product role…" testId="product-role-detail-loading" />
      )}
      {data === null && (
        <p className="muted" data-testid="product-role-detail-missing">
          There is no product role with the key <code>{roleKey}</code>: it may have been deleted.
        </p>
      )}
      {data && (
        <section className="panel" data-testid="product-role-detail" data-role-key={data.key}>
          <div className="panel__header">
            <h2 className="panel__title">
              {data.name}
              {data.builtin && (
                <>
                  {' '}
                  <span className="badge">Built in</span>
                </>
              )}
            </h2>
            <div className="panel__actions">{onEdit && <ProductRoleActions role={data} onEdit={onEdit} />}</div>
          </div>
          <dl className="facts">
            <dt>Key</dt>
            <dd>
              <Identifier value={data.key} label="role key" testId="product-role-detail-key" />
            </dd>
            <dt>Description</dt>
            <dd>{data.description || <span className="muted">none</span>}</dd>
            <dt>Product permissions</dt>
            <dd>
              {data.permissions.length === 0 ? (
                <span className="muted">none</span>
              ) : (
                <span className="chip-list" data-testid="product-role-detail-permissions">
                  {data.permissions.map((permission) => (
                    <code key={permission}>{permission}</code>
                  ))}
                </span>
              )}
            </dd>
            <dt>Created</dt>
            <dd>
              <When at={data.createdAt} empty="—" />
            </dd>
            <dt>Changed</dt>
            <dd>
              <When at={data.updatedAt} empty="—" />
            </dd>
          </dl>
        </section>
      )}
    </>
  );
}

/**
 * A product role's "⋯" menu. A built-in row: Edit permissions… only. Any other: Edit…, then
 * (separated) Delete…, confirmed by typing its name; a role still held by members or pending
 * invitations is refused (role_in_use) and the API's message, saying how many, shows as an error
 * toast, since the way out is in the organizations that hold it.
 */
function ProductRoleActions({ role, onEdit }: { role: TProductRole; onEdit: (role: TProductRole) => void }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateCatalog();
  const remove = useMutation(trpc.authorization.productRole.delete.mutationOptions({ onSuccess: invalidate }));
  if (role.builtin) {
    return (
      <RowActions
        name={role.name}
        testId="product-role-actions"
        actions={[{ label: 'Edit permissions…', testId: 'product-role-edit', onSelect: () => onEdit(role) }]}
      />
    );
  }
  const deleteRole = async () => {
    try {
      await remove.mutateAsync({ id: role.id });
      toast.success(`Deleted the product role ${role.name}`);
    } catch (error) {
      const parsed = parseError(error);
      if (parsed.code !== 'role_in_use') {
        throw error;
      }
      toast.error(`Could not delete the product role ${role.name}: ${parsed.message}`);
    }
  };
  return (
    <RowActions
      name={role.name}
      testId="product-role-actions"
      actions={[
        { label: 'Edit…', testId: 'product-role-edit', onSelect: () => onEdit(role) },
        {
          label: 'Delete…',
          testId: 'product-role-delete',
          destructive: true,
          confirm: {
            title: `Delete the product role ${role.name}?`,
            consequence: (
              <>
                The role <code>{role.key}</code> is removed from every organization. Only a role that no member or pending invitation of any
                organization holds can be deleted. This cannot be undone.
              </>
            ),
            confirmLabel: 'Delete role',
            typeToConfirm: role.name,
            testId: 'product-role-delete-dialog',
            onConfirm: deleteRole,
          },
        },
      ]}
    />
  );
}

import type { TApiPermission, TApiResource, TProductRole } from '@svc/contracts/authorization';
import { useMutation, useQuery } from '@tanstack/react-query';
import { type ReactNode, useMemo, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { toast } from 'sonner';
import { Chips } from '../../components/chips.tsx';
import { ConfirmDialog } from '../../components/confirm-dialog.tsx';
import { actionsColumn, columnHelper, DataTable, whenColumn } from '../../components/data-table.tsx';
import { EmptyState } from '../../components/empty-state.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';
import { AddPermissionDialog, EditApiResourceDialog, EditPermissionDialog, useInvalidateCatalog } from './api-resource-dialogs.tsx';

/** A list of names in a sentence: "a", "a and b", "a, b and c". */
function inWords(names: readonly ReactNode[]): ReactNode {
  return names.map((name, index) => (
    // biome-ignore lint/suspicious/noArrayIndexKey: a fixed sentence, rendered whole each time
    <span key={index}>
      {index > 0 && (index === names.length - 1 ? ' and ' : ', ')}
      {name}
    </span>
  ));
}

/** The product roles (built-in rows included) holding `name`. */
function holdersOf(roles: readonly TProductRole[], name: string): TProductRole[] {
  return roles.filter((role) => role.permissions.includes(name));
}

/**
 * What deleting `names` takes away, for a confirmation: they leave every role holding them, named
 * for the product roles (custom roles are each organization's, and not listed to the platform).
 */
function removalConsequence(names: readonly string[], roles: readonly TProductRole[] | undefined): ReactNode {
  const holders = roles ? roles.filter((role) => names.some((name) => role.permissions.includes(name))) : undefined;
  const them = names.length === 1 ? 'it' : 'them';
  return (
    <>
      {names.length === 1 ? 'It is' : 'They are'} taken out of every role holding {them}:{' '}
      {holders === undefined ? (
        'the product roles'
      ) : holders.length === 0 ? (
        `no product role holds ${names.length === 1 ? 'it' : 'any of them'}`
      ) : (
        <>
          the product {holders.length === 1 ? 'role' : 'roles'} {inWords(holders.map((role) => <strong key={role.id}>{role.name}</strong>))}
        </>
      )}
      , and any organization’s custom roles and machine clients.
    </>
  );
}

/** What a permission's row menu asks the page to open. */
type PermissionHandlers = { onEdit: (permission: TApiPermission) => void };

/**
 * The permissions table: the name (an Identifier to copy), what it allows, the product roles
 * holding it now, when it was added, and (for platform admins) the row's menu.
 */
function permissionColumns(resource: TApiResource, productRoles: readonly TProductRole[] | undefined, handlers: PermissionHandlers | null) {
  const column = columnHelper<TApiPermission>();
  return column.columns([
    column.accessor('name', {
      header: 'Permission',
      sortFn: 'text',
      meta: { width: '14rem' },
      cell: (info) => <Identifier value={info.getValue()} label="permission name" tail={8} testId="api-permission-name" />,
    }),
    column.accessor('description', {
      header: 'Description',
      sortFn: 'text',
      cell: (info) =>
        info.getValue() ? (
          <span title={info.getValue()} data-testid="api-permission-description">
            {info.getValue()}
          </span>
        ) : (
          <span className="muted" data-testid="api-permission-description">
            none
          </span>
        ),
    }),
    column.display({
      id: 'roles',
      header: 'Product roles',
      meta: { width: '16rem', description: 'The product roles (built-in rows included) that grant it now' },
      cell: (info) => {
        if (productRoles === undefined) {
          return null;
        }
        const holders = holdersOf(productRoles, info.row.original.name);
        return <Chips names={holders.map((role) => role.key)} testId="api-permission-roles" />;
      },
    }),
    whenColumn(column, 'createdAt', 'Added'),
    ...(handlers
      ? [
          actionsColumn(column, (permission) => (
            <PermissionActions resource={resource} permission={permission} productRoles={productRoles} {...handlers} />
          )),
        ]
      : []),
  ]);
}

/**
 * One API resource (`/authorization/resources/:id`): its identifier, name and description, its
 * permissions with the product roles holding each, and, for platform admins, editing all of it
 * and deleting the resource. Everyone else who may read the catalog sees it read-only.
 */
export function ApiResourcePage() {
  const { id = '' } = useParams();
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const slug = active.organization?.slug;
  const isPlatformAdmin = active.me?.isPlatformAdmin === true;
  const resource = useQuery(trpc.authorization.resource.get.queryOptions({ id, organization_slug: slug }, { enabled: slug !== undefined }));
  // The first page starts with the built-in rows: enough to say who holds what for most products.
  const productRoles = useQuery(
    trpc.authorization.productRole.list.queryOptions({ organization_slug: slug, limit: 200 }, { enabled: slug !== undefined }),
  );
  const [editing, setEditing] = useState(false);
  const [adding, setAdding] = useState(false);
  const [editingPermission, setEditingPermission] = useState<TApiPermission | null>(null);
  const data = resource.data;
  const roles = productRoles.data?.data;
  // Built again only when the resource, the roles or the menus change.
  const columns = useMemo(
    () => (data ? permissionColumns(data, roles, isPlatformAdmin ? { onEdit: setEditingPermission } : null) : []),
    [data, roles, isPlatformAdmin],
  );

  return (
    <div data-testid="page-api-resource" data-resource-id={id}>
      <p className="breadcrumb">
        <Link to="/authorization/resources" data-testid="api-resource-back">
          ← API resources
        </Link>
      </p>
      <PageHeader
        title={data ? data.name : 'API resource'}
        actions={
          data && isPlatformAdmin && <EditApiResourceDialog key={data.updatedAt} resource={data} open={editing} onOpenChange={setEditing} />
        }
      />
      {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
      {resource.isError && (
        <ErrorPanel error={resource.error} title="Could not load the API resource" onRetry={() => void resource.refetch()} />
      )}
      {(active.isLoading || (slug !== undefined && resource.isPending)) && !resource.isError && (
        <Skeleton label="Loading the API resource…" testId="api-resource-loading" />
      )}
      {data && (
        <div className="detail-stack">
          <section className="panel" data-testid="api-resource-facts">
            <h2 className="panel__title">API</h2>
            <dl className="facts">
              <dt>Identifier</dt>
              <dd>
                <Identifier value={data.identifier} label="API identifier" tail={16} testId="api-resource-detail-identifier" />
                <span className="muted"> the resource parameter, and the audience of its tokens</span>
              </dd>
              <dt>Name</dt>
              <dd data-testid="api-resource-detail-name">{data.name}</dd>
              <dt>Description</dt>
              <dd data-testid="api-resource-detail-description">{data.description || <span className="muted">none</span>}</dd>
              <dt>Id</dt>
              <dd>
                <Identifier value={data.id} label="API resource id" testId="api-resource-detail-id" />
              </dd>
              <dt>Registered</dt>
              <dd>
                <When at={data.createdAt} empty="—" />
              </dd>
              <dt>Changed</dt>
              <dd>
                <When at={data.updatedAt} empty="—" />
              </dd>
            </dl>
          </section>
          <section className="panel" data-testid="api-permissions">
            <div className="panel__header">
              <h2 className="panel__title">Permissions ({data.permissions.length})</h2>
              {isPlatformAdmin && (
                <div className="panel__actions">
                  <AddPermissionDialog resource={data} open={adding} onOpenChange={setAdding} />
                </div>
              )}
            </div>
            {data.permissions.length === 0 ? (
              <EmptyState
                title="No permissions yet."
                next={
                  isPlatformAdmin
                    ? 'Add the permissions this API checks, such as invoices.read; then give them to roles.'
                    : 'A platform admin declares the permissions this API checks.'
                }
                action={isPlatformAdmin ? { label: 'Add permission', onClick: () => setAdding(true) } : undefined}
                testId="api-permissions-empty"
              />
            ) : (
              <DataTable
                columns={columns}
                data={data.permissions}
                rowId={(permission) => permission.name}
                rowAttributes={(permission) => ({ 'data-testid': 'api-permission-row', 'data-permission': permission.name })}
                label="Permissions"
                minWidth="48rem"
                testId="api-permissions-table"
              />
            )}
          </section>
          {isPlatformAdmin && <DeleteResource resource={data} productRoles={productRoles.data?.data} />}
        </div>
      )}
      {data && editingPermission && (
        <EditPermissionDialog
          key={editingPermission.name}
          resource={data}
          permission={editingPermission}
          onClose={() => setEditingPermission(null)}
        />
      )}
    </div>
  );
}

/**
 * A permission's "⋯" menu: Edit description…, then (separated) Delete…, confirmed by typing its
 * name, saying which roles lose it.
 */
function PermissionActions({
  resource,
  permission,
  productRoles,
  onEdit,
}: { resource: TApiResource; permission: TApiPermission; productRoles: readonly TProductRole[] | undefined } & PermissionHandlers) {
  const trpc = useTRPC();
  const invalidate = useInvalidateCatalog();
  const remove = useMutation(trpc.authorization.resource.permission.delete.mutationOptions({ onSuccess: invalidate }));
  return (
    <RowActions
      name={permission.name}
      testId="api-permission-actions"
      actions={[
        { label: 'Edit description…', testId: 'api-permission-edit', onSelect: () => onEdit(permission) },
        {
          label: 'Delete…',
          testId: 'api-permission-delete',
          destructive: true,
          confirm: {
            title: `Delete the permission ${permission.name}?`,
            consequence: <>The permission is deleted. {removalConsequence([permission.name], productRoles)} This cannot be undone.</>,
            confirmLabel: 'Delete permission',
            typeToConfirm: permission.name,
            testId: 'api-permission-delete-dialog',
            onConfirm: async () => {
              await remove.mutateAsync({ id: resource.id, name: permission.name });
              toast.success(`Deleted the permission ${permission.name}`);
            },
          },
        },
      ]}
    />
  );
}

/** The resource's danger zone: deleting it with its permissions, confirmed by typing its name. */
function DeleteResource({ resource, productRoles }: { resource: TApiResource; productRoles: readonly TProductRole[] | undefined }) {
  const trpc = useTRPC();
  const navigate = useNavigate();
  const invalidate = useInvalidateCatalog();
  const [confirming, setConfirming] = useState(false);
  const remove = useMutation(trpc.authorization.resource.delete.mutationOptions());
  const names = resource.permissions.map((p) => p.name);
  return (
    <section className="panel" data-testid="api-resource-delete">
      <h2 className="panel__title">Delete this API</h2>
      <p className="muted">
        Deletes {resource.name} and its {names.length === 1 ? 'permission' : `${names.length} permissions`}, and takes them out of every
        role and machine client holding them. Applications can no longer ask for its tokens (<code>invalid_target</code>); tokens already
        issued stay valid until they expire.
      </p>
      <div className="form-row">
        <button
          type="button"
          className="button button--danger"
          onClick={() => setConfirming(true)}
          data-testid="api-resource-delete-button"
        >
          Delete API…
        </button>
      </div>
      <ConfirmDialog
        open={confirming}
        onOpenChange={setConfirming}
        title={`Delete the API ${resource.name}?`}
        consequence={
          <>
            Applications can no longer ask for tokens for <code>{resource.identifier}</code>.{' '}
            {names.length === 0 ? (
              'It declares no permissions, so no role changes.'
            ) : (
              <>
                Its {names.length === 1 ? 'permission' : 'permissions'} {inWords(names.map((name) => <code key={name}>{name}</code>))}{' '}
                {names.length === 1 ? 'is' : 'are'} deleted. {removalConsequence(names, productRoles)}
              </>
            )}{' '}
            This cannot be undone.
          </>
        }
        confirmLabel="Delete API"
        typeToConfirm={resource.name}
        onConfirm={async () => {
          await remove.mutateAsync({ id: resource.id });
          toast.success(`Deleted the API ${resource.name}`);
          await invalidate();
          await navigate('/authorization/resources');
        }}
        testId="api-resource-delete-dialog"
      />
    </section>
  );
}

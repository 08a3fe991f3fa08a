import { zodResolver } from '@hookform/resolvers/zod';
import { type TTenant, ZUpdateTenantRequest } from '@svc/contracts/tenants';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { Link, useNavigate } from 'react-router';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

/** The active organization: what it is, rename or re-slug it, delete it. */
export function SettingsPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const organizationId = active.organization?.id;
  const tenant = useQuery(trpc.tenants.get.queryOptions({ id: organizationId ?? '' }, { enabled: organizationId !== undefined }));

  return (
    <div data-testid="page-settings">
      <PageHeader title="Settings" description="The organization this workspace is: its name, its slug, and deleting it." />
      {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
      {active.me && !active.organization && (
        <p className="muted" data-testid="settings-no-workspace">
          You are not in a workspace: there is nothing to configure.
        </p>
      )}
      {tenant.isError && <ErrorPanel error={tenant.error} title="Could not load the organization" onRetry={() => void tenant.refetch()} />}
      {(active.isLoading || (organizationId !== undefined && tenant.isPending)) && !tenant.isError && (
        <p className="loading" data-testid="settings-loading">
          Loading the organization…
        </p>
      )}
      {tenant.data && (
        // The shared stylesheet spaces panels by layout, not margins: stack them with a gap.
        <div style={{ display: 'grid', gap: 16 }}>
          <OrganizationFacts tenant={tenant.data} />
          <RenameForm tenant={tenant.data} />
          <DangerZone tenant={tenant.data} />
        </div>
      )}
    </div>
  );
}

function OrganizationFacts({ tenant }: { tenant: TTenant }) {
  return (
    <section className="panel" data-testid="settings-facts">
      <h2 className="panel__title">Organization</h2>
      <dl className="facts">
        <dt>Name</dt>
        <dd data-testid="settings-name">{tenant.name}</dd>
        <dt>Id</dt>
        <dd>
          <code data-testid="settings-id">{tenant.id}</code>
        </dd>
        <dt>Slug</dt>
        <dd>
          <code data-testid="settings-slug">{tenant.slug}</code> <span className="muted">(organization_slug in API calls)</span>
        </dd>
        <dt>Kind</dt>
        <dd>
          <span className="pill pill--off" data-testid="settings-kind">
            {tenant.kind}
          </span>
        </dd>
        <dt>Created</dt>
        <dd>
          <time dateTime={tenant.createdAt}>{new Date(tenant.createdAt).toLocaleString()}</time>
        </dd>
      </dl>
    </section>
  );
}

function RenameForm({ tenant }: { tenant: TTenant }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const form = useForm({
    resolver: zodResolver(ZUpdateTenantRequest),
    // Follows the server's copy: after a save the fields show what was stored.
    values: { id: tenant.id, name: tenant.name, slug: tenant.slug },
  });
  const errors = form.formState.errors;
  const update = useMutation(
    trpc.tenants.update.mutationOptions({
      onSuccess: async () => {
        // The header shows the workspace name; the tenant list and this page show both.
        await Promise.all([
          queryClient.invalidateQueries({ queryKey: trpc.tenants.get.queryKey({ id: tenant.id }) }),
          queryClient.invalidateQueries({ queryKey: trpc.me.get.queryKey() }),
          queryClient.invalidateQueries({ queryKey: trpc.tenants.list.queryKey() }),
        ]);
      },
    }),
  );
  const save = form.handleSubmit((values) => update.mutateAsync(values).catch(() => undefined));

  return (
    <section className="panel" data-testid="settings-rename">
      <h2 className="panel__title">Name and slug</h2>
      <p className="muted">
        The slug names the organization in URLs and in <code>organization_slug</code>: integrations that use the old one stop finding it.
      </p>
      <form className="form-row" onSubmit={save} noValidate data-testid="settings-form">
        <label className="form-field">
          <span>Name</span>
          <input data-testid="settings-name-input" {...form.register('name')} />
          {errors.name && (
            <span className="form-field__error" data-testid="settings-name-error">
              {errors.name.message}
            </span>
          )}
        </label>
        <label className="form-field">
          <span>Slug</span>
          <input data-testid="settings-slug-input" disabled={tenant.kind === 'platform'} {...form.register('slug')} />
          {errors.slug && (
            <span className="form-field__error" data-testid="settings-slug-error">
              {errors.slug.message}
            </span>
          )}
        </label>
        <button
          type="submit"
          className="button button--primary"
          disabled={update.isPending || !form.formState.isDirty}
          data-testid="settings-save"
        >
          {update.isPending ? 'Saving…' : 'Save'}
        </button>
      </form>
      {update.isSuccess && !form.formState.isDirty && (
        <p className="muted" data-testid="settings-saved">
          Saved.
        </p>
      )}
      {update.isError && <ErrorPanel error={update.error} title="Could not save" />}
    </section>
  );
}

function DangerZone({ tenant }: { tenant: TTenant }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const remove = useMutation(
    trpc.tenants.delete.mutationOptions({
      onSuccess: async () => {
        // The session has moved to another workspace (or none): everything on screen is stale.
        await queryClient.invalidateQueries();
        await navigate('/');
      },
    }),
  );

  return (
    <section className="panel" data-testid="settings-delete">
      <h2 className="panel__title">Delete the organization</h2>
      {tenant.kind === 'platform' ? (
        <p className="muted" data-testid="settings-delete-platform">
          The platform workspace cannot be deleted.
        </p>
      ) : (
        <>
          <p className="muted">
            Deletes {tenant.name} with its members, roles, invitations, API keys, applications, usage events, billing sync logs, webhooks
            and exports. Only its audit log entries are kept, and the <code>tenant.deleted</code> webhook is still sent to endpoints
            subscribed to it.
          </p>
          <p className="muted" data-testid="settings-delete-export-first">
            Nothing else can be recovered afterwards: <Link to="/exports">export the organization</Link> first and keep the file.
          </p>
          <ConfirmButton
            question={`Delete the organization ${tenant.name} (${tenant.slug})?`}
            consequence="Everything it owns, its usage events included, is deleted at once, and its applications and API keys stop working. Export it first if you need its data: this cannot be undone."
            confirmLabel={`Delete ${tenant.name}`}
            disabled={remove.isPending}
            onConfirm={() => remove.mutateAsync({ id: tenant.id }).catch(() => undefined)}
            testId="settings-delete-button"
          >
            Delete organization
          </ConfirmButton>
        </>
      )}
      {remove.isError && <ErrorPanel error={remove.error} title="Could not delete the organization" />}
    </section>
  );
}

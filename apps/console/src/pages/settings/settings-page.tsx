import { zodResolver } from '@hookform/resolvers/zod';
import { type TTenant, ZUpdateTenantRequest } from '@svc/contracts/tenants';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { Link, useNavigate } from 'react-router';
import { toast } from 'sonner';
import { ConfirmDialog } from '../../components/confirm-dialog.tsx';
import { FormDialog } from '../../components/dialog.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Field } from '../../components/field.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

/** The active organization: what it is, rename or re-slug it (a FormDialog), delete it. */
export function SettingsPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const organizationId = active.organization?.id;
  const [editing, setEditing] = useState(false);
  const tenant = useQuery(trpc.tenants.get.queryOptions({ id: organizationId ?? '' }, { enabled: organizationId !== undefined }));

  return (
    <div data-testid="page-settings">
      <PageHeader
        title="Settings"
        description="The organization this workspace is: its name, its slug, and deleting it."
        actions={tenant.data && <RenameDialog key={tenant.data.id} tenant={tenant.data} open={editing} onOpenChange={setEditing} />}
      />
      {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
      {active.me && !active.organization && (
        <p className="muted" data-testid="settings-no-workspace">
          You are not in a workspace: there is nothing to configure.
        </p>
      )}
      {tenant.isError && <ErrorPanel error={tenant.error} title="Could not load the organization" onRetry={() => void tenant.refetch()} />}
      {(active.isLoading || (organizationId !== undefined && tenant.isPending)) && !tenant.isError && (
        <Skeleton label="Loading the organization…" testId="settings-loading" />
      )}
      {tenant.data && (
        <div className="detail-stack">
          <OrganizationFacts tenant={tenant.data} />
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
          <Identifier value={tenant.id} label="organization id" testId="settings-id" />
        </dd>
        <dt>Slug</dt>
        <dd>
          <Identifier value={tenant.slug} label="organization slug" testId="settings-slug" />
          <span className="muted"> organization_slug in API calls</span>
        </dd>
        <dt>Kind</dt>
        <dd>
          <span className="pill pill--off" data-testid="settings-kind">
            {tenant.kind}
          </span>
        </dd>
        <dt>Created</dt>
        <dd>
          <When at={tenant.createdAt} empty="—" />
        </dd>
      </dl>
    </section>
  );
}

type RenameDialogProps = { tenant: TTenant; open: boolean; onOpenChange: (open: boolean) => void };

/** "Edit name and slug" (the header's primary button): checked with the contracts schema, a taken slug refused by the API. */
function RenameDialog({ tenant, open, onOpenChange }: RenameDialogProps) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const current = { id: tenant.id, name: tenant.name, slug: tenant.slug };
  const form = useForm({ resolver: zodResolver(ZUpdateTenantRequest), defaultValues: current });
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
  const close = (next: boolean) => {
    if (next) {
      // Every opening starts from what is stored now (a save changes the tenant).
      form.reset(current);
    } else {
      update.reset();
    }
    onOpenChange(next);
  };
  const save = form.handleSubmit(async (values) => {
    const saved = await update.mutateAsync(values).catch(() => undefined);
    if (saved) {
      toast.success('Organization saved');
      close(false);
    }
  });

  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={
        <button type="button" className="button button--primary" data-testid="settings-edit-open">
          Edit name and slug
        </button>
      }
      title="Name and slug"
      description={
        <>
          The slug names the organization in URLs and in <code>organization_slug</code>: integrations that use the old one stop finding it.
        </>
      }
      onSubmit={save}
      submitLabel="Save"
      pending={update.isPending}
      error={update.error}
      errorTitle="Could not save"
      testId="settings-edit"
    >
      <div className="form-grid">
        <Field label="Name" error={errors.name?.message} testId="settings-name">
          {(control) => <input {...control} autoComplete="off" data-testid="settings-name-input" {...form.register('name')} />}
        </Field>
        <Field
          label="Slug"
          error={errors.slug?.message}
          hint={tenant.kind === 'platform' ? 'The platform workspace keeps its slug.' : undefined}
          testId="settings-slug"
        >
          {(control) => (
            <input
              {...control}
              autoComplete="off"
              disabled={tenant.kind === 'platform'}
              data-testid="settings-slug-input"
              {...form.register('slug')}
            />
          )}
        </Field>
      </div>
    </FormDialog>
  );
}

function DangerZone({ tenant }: { tenant: TTenant }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [confirming, setConfirming] = useState(false);
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
          <div className="form-row">
            <button
              type="button"
              className="button button--danger"
              onClick={() => setConfirming(true)}
              data-testid="settings-delete-button"
            >
              Delete organization…
            </button>
          </div>
          <ConfirmDialog
            open={confirming}
            onOpenChange={setConfirming}
            title={`Delete the organization ${tenant.name} (${tenant.slug})?`}
            consequence="Everything it owns, its usage events included, is deleted at once, and its applications and API keys stop working. Export it first if you need its data: this cannot be undone."
            confirmLabel={`Delete ${tenant.name}`}
            typeToConfirm={tenant.name}
            onConfirm={() => remove.mutateAsync({ id: tenant.id })}
            testId="settings-delete-button-dialog"
          />
        </>
      )}
    </section>
  );
}

import { zodResolver } from '@hookform/resolvers/zod';
import { type TDirectory, type TGroupRole, ZCreateDirectoryRequest } from '@svc/contracts/directories';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { toast } from 'sonner';
import { z } from 'zod';
import { ConfirmDialog } from '../../components/confirm-dialog.tsx';
import { CopyButton } from '../../components/copy-button.tsx';
import { dialogMutation, FormDialog } from '../../components/dialog.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Field } from '../../components/field.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { SecretOnceDialog } from '../../components/secret-once.tsx';
import { Select } from '../../components/select.tsx';
import { SetupLinkHint } from '../../components/setup-link-hint.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useRoleOptions } from '../../lib/roles.ts';
import { useTRPC } from '../../trpc.ts';

const ZCreateDirectoryForm = z.object({ name: ZCreateDirectoryRequest.shape.name });

/** A token the api has just returned (create or rotate): shown until dismissed, never again. */
type Revealed = { title: string; directoryId: string; scimBaseUrl: string; token: string };

/**
 * Organization settings -> Directory sync (docs/enterprise.md "Directory sync"): SCIM directories
 * for Okta, Entra ID and other identity providers. Create one (base URL and token shown once),
 * rotate its token, map groups to roles, read its request log, delete it.
 */
export function DirectoriesPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const organization = active.organization;
  const [adding, setAdding] = useState(false);
  const [revealed, setRevealed] = useState<Revealed | null>(null);
  const directories = useQuery(
    trpc.directories.list.queryOptions({ organization_slug: organization?.slug, limit: 200 }, { enabled: organization !== null }),
  );

  return (
    <div data-testid="page-directory-sync">
      <PageHeader
        title="Directory sync"
        description="Let your identity provider (Okta, Entra ID, ...) add, update and remove your organization's people over SCIM 2.0, and give them roles by group."
        actions={
          organization && <CreateDirectoryDialog slug={organization.slug} open={adding} onOpenChange={setAdding} onCreated={setRevealed} />
        }
      />
      <SetupLinkHint what="your identity provider" />
      <SecretOnceDialog
        revealed={revealed && { title: revealed.title, value: revealed.token }}
        onDismiss={() => setRevealed(null)}
        description="Paste the SCIM base URL and this token into your identity provider's provisioning settings: this is the only time svc shows the token."
        label="Bearer token"
        bodyAttributes={revealed ? { 'data-directory-id': revealed.directoryId } : undefined}
        testId="directory-revealed"
        secretTestId="directory-token"
      >
        {revealed && (
          <p>
            SCIM base URL: <code data-testid="directory-revealed-url">{revealed.scimBaseUrl}</code>{' '}
            <CopyButton value={revealed.scimBaseUrl} label="Copy SCIM base URL" testId="directory-revealed-url-copy" />
          </p>
        )}
      </SecretOnceDialog>
      {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
      {directories.isError && (
        <ErrorPanel error={directories.error} title="Could not load the directories" onRetry={() => void directories.refetch()} />
      )}
      {(active.isLoading || directories.isPending) && !directories.isError && organization !== null && (
        <Skeleton label="Loading the directories…" testId="directories-loading" />
      )}
      {directories.data && directories.data.data.length === 0 && (
        <p className="muted" data-testid="directories-empty">
          No directories yet. Create one, then paste its SCIM base URL and token into your identity provider.
        </p>
      )}
      {directories.data && organization && (
        <div className="detail-stack" data-testid="directories-list">
          {directories.data.data.map((directory) => (
            <DirectoryPanel key={directory.id} directory={directory} slug={organization.slug} onRotated={setRevealed} />
          ))}
        </div>
      )}
    </div>
  );
}

function CreateDirectoryDialog({
  slug,
  open,
  onOpenChange,
  onCreated,
}: {
  slug: string;
  open: boolean;
  onOpenChange: (open: boolean) => void;
  onCreated: (revealed: Revealed) => void;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const empty = { name: '' };
  const form = useForm({ resolver: zodResolver(ZCreateDirectoryForm), defaultValues: empty });
  const create = useMutation(trpc.directories.create.mutationOptions());
  const { close, settle } = dialogMutation({ onOpenChange, forget: () => form.reset(empty), mutation: create });
  const submit = form.handleSubmit(async (values) => {
    const created = await settle(create.mutateAsync({ organization_slug: slug, name: values.name }));
    if (created) {
      onCreated({
        title: `Directory ${created.name} created`,
        directoryId: created.id,
        scimBaseUrl: created.scimBaseUrl,
        token: created.token,
      });
      await queryClient.invalidateQueries({ queryKey: trpc.directories.list.pathKey() });
    }
  });
  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={
        <button type="button" className="button button--primary" data-testid="directories-add-open">
          Create directory
        </button>
      }
      title="Create a directory"
      description="One per identity provider. svc then shows the SCIM base URL and a bearer token to paste into it."
      onSubmit={submit}
      submitLabel="Create directory"
      pending={create.isPending}
      pendingLabel="Creating…"
      error={create.error}
      errorTitle="Could not create the directory"
      testId="directories-add"
    >
      <Field label="Name" id="directories-add-name" error={form.formState.errors.name?.message} testId="directories-add-name">
        {(control) => (
          <input {...control} autoComplete="off" placeholder="Okta" data-testid="directories-add-name" {...form.register('name')} />
        )}
      </Field>
    </FormDialog>
  );
}

/** One directory: its URL, token prefix, counts, mapping, request log; rotate and delete. */
function DirectoryPanel({ directory, slug, onRotated }: { directory: TDirectory; slug: string; onRotated: (r: Revealed) => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.directories.list.pathKey() });
  const rotate = useMutation(trpc.directories.rotateToken.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.directories.delete.mutationOptions({ onSuccess: refresh }));
  const [rotating, setRotating] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [showLog, setShowLog] = useState(false);

  return (
    <section className="panel" data-testid="directory" data-directory-id={directory.id}>
      <div className="panel__header">
        <h2 className="panel__title" data-testid="directory-name">
          {directory.name}
        </h2>
        <div className="panel__actions">
          <button type="button" className="button" data-testid="directory-rotate" onClick={() => setRotating(true)}>
            Rotate token…
          </button>
          <button type="button" className="button button--danger" data-testid="directory-delete" onClick={() => setDeleting(true)}>
            Delete…
          </button>
        </div>
      </div>
      <dl className="facts">
        <dt>SCIM base URL</dt>
        <dd>
          <code data-testid="directory-url">{directory.scimBaseUrl}</code>{' '}
          <CopyButton value={directory.scimBaseUrl} label="Copy SCIM base URL" testId="directory-url-copy" />
        </dd>
        <dt>Token</dt>
        <dd>
          <code>{directory.tokenPrefix}…</code>{' '}
          <span className="muted">
            (rotated <When at={directory.tokenRotatedAt} empty="never" />)
          </span>
        </dd>
        <dt>Provisioned</dt>
        <dd data-testid="directory-counts">
          {directory.userCount} users, {directory.groupCount} groups
        </dd>
        <dt>Last request</dt>
        <dd>
          <When at={directory.lastRequestAt} empty="none yet" />
        </dd>
      </dl>
      <MappingEditor directory={directory} slug={slug} />
      <div className="panel__actions" style={{ marginTop: 16 }}>
        <button type="button" className="button" data-testid="directory-log-toggle" onClick={() => setShowLog((v) => !v)}>
          {showLog ? 'Hide request log' : 'Show request log'}
        </button>
      </div>
      {showLog && <RequestLog directory={directory} slug={slug} />}
      <ConfirmDialog
        open={rotating}
        onOpenChange={setRotating}
        tone="primary"
        title={`Rotate the token of ${directory.name}?`}
        consequence="A new token is shown once; the current one stops working at once, so paste the new one into your identity provider."
        confirmLabel="Rotate token"
        testId="directory-rotate-dialog"
        onConfirm={async () => {
          const rotated = await rotate.mutateAsync({ id: directory.id, organization_slug: slug });
          onRotated({
            title: `New token for ${rotated.name}`,
            directoryId: rotated.id,
            scimBaseUrl: rotated.scimBaseUrl,
            token: rotated.token,
          });
        }}
      />
      <ConfirmDialog
        open={deleting}
        onOpenChange={setDeleting}
        title={`Delete the directory ${directory.name}?`}
        consequence="Its token stops working and its provisioned users and groups are forgotten; the memberships it made stay (remove people in Members)."
        confirmLabel="Delete directory"
        typeToConfirm={directory.name}
        testId="directory-delete-dialog"
        onConfirm={() => remove.mutateAsync({ id: directory.id, organization_slug: slug })}
      />
    </section>
  );
}

/** The default role and the group -> role rows, saved together. */
function MappingEditor({ directory, slug }: { directory: TDirectory; slug: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const roles = useRoleOptions(slug);
  const [defaultRoleKey, setDefaultRoleKey] = useState(directory.defaultRoleKey);
  const [rows, setRows] = useState<TGroupRole[]>(directory.groupRoles);
  const update = useMutation(
    trpc.directories.update.mutationOptions({
      onSuccess: async () => {
        toast.success(`Mapping of ${directory.name} saved`);
        await queryClient.invalidateQueries({ queryKey: trpc.directories.list.pathKey() });
      },
    }),
  );
  const changed = defaultRoleKey !== directory.defaultRoleKey || JSON.stringify(rows) !== JSON.stringify(directory.groupRoles);
  const setRow = (i: number, next: Partial<TGroupRole>) => setRows((all) => all.map((r, j) => (j === i ? { ...r, ...next } : r)));
  return (
    <div className="form-grid" style={{ marginTop: 16 }} data-testid="directory-mapping">
      <Field label="Role of people in no mapped group" id={`directory-default-${directory.id}`} testId="directory-default-field">
        {(control) => (
          <Select
            {...control}
            value={defaultRoleKey}
            options={roles.options}
            onValueChange={setDefaultRoleKey}
            testId="directory-default-select"
          />
        )}
      </Field>
      <p className="muted">Groups to roles, first match wins (group names as your identity provider sends them, any case).</p>
      {rows.map((row, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity but their place while edited
        <div key={i} className="panel__actions" data-testid="directory-mapping-row">
          <input
            aria-label="Group name"
            value={row.group}
            placeholder="Engineering Admins"
            data-testid="directory-mapping-group"
            onChange={(e) => setRow(i, { group: e.target.value })}
          />
          <Select
            aria-label="Role of the group"
            value={row.roleKey}
            options={roles.options}
            onValueChange={(roleKey) => setRow(i, { roleKey })}
            testId="directory-mapping-role"
          />
          <button type="button" className="button" onClick={() => setRows((all) => all.filter((_, j) => j !== i))}>
            Remove
          </button>
        </div>
      ))}
      {update.error && <ErrorPanel error={update.error} title="Could not save the mapping" />}
      <div className="panel__actions">
        <button
          type="button"
          className="button"
          data-testid="directory-mapping-add"
          onClick={() => setRows((all) => [...all, { group: '', roleKey: 'org_member' }])}
        >
          Add group
        </button>
        <button
          type="button"
          className="button button--primary"
          disabled={!changed || update.isPending || rows.some((r) => r.group.trim() === '')}
          data-testid="directory-mapping-save"
          onClick={() => update.mutate({ id: directory.id, organization_slug: slug, defaultRoleKey, groupRoles: rows })}
        >
          {update.isPending ? 'Saving…' : 'Save mapping'}
        </button>
      </div>
    </div>
  );
}

/** The last SCIM requests: when, method, path, status (never a body or the token). */
function RequestLog({ directory, slug }: { directory: TDirectory; slug: string }) {
  const trpc = useTRPC();
  const log = useQuery(trpc.directories.requests.queryOptions({ id: directory.id, organization_slug: slug }));
  if (log.isError) {
    return <ErrorPanel error={log.error} title="Could not load the request log" onRetry={() => void log.refetch()} />;
  }
  if (!log.data) {
    return <Skeleton label="Loading the request log…" testId="directory-log-loading" />;
  }
  if (log.data.data.length === 0) {
    return (
      <p className="muted" data-testid="directory-log-empty">
        No requests yet.
      </p>
    );
  }
  return (
    <table className="table" data-testid="directory-log">
      <thead>
        <tr>
          <th>When</th>
          <th>Method</th>
          <th>Path</th>
          <th>Status</th>
        </tr>
      </thead>
      <tbody>
        {log.data.data.map((r, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: log lines have no id of their own
          <tr key={i} data-testid="directory-log-row">
            <td>
              <When at={r.at} empty="—" />
            </td>
            <td>{r.method}</td>
            <td>
              <code>{r.path}</code>
            </td>
            <td>{r.status}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

import { zodResolver } from '@hookform/resolvers/zod';
import {
  SETUP_LINK_MAX_HOURS,
  type TSetupLink,
  type TSetupLinkPurpose,
  type TSetupLinkStatus,
  ZCreateSetupLinkRequest,
} from '@svc/contracts/setup-links';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { z } from 'zod';
import { ConfirmDialog } from '../../components/confirm-dialog.tsx';
import { dialogMutation, FormDialog } from '../../components/dialog.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Field } from '../../components/field.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { SecretOnceDialog } from '../../components/secret-once.tsx';
import { Select, type SelectOption } from '../../components/select.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useTRPC } from '../../trpc.ts';

const PURPOSE_OPTIONS: SelectOption<TSetupLinkPurpose>[] = [
  { value: 'sso', label: 'SSO connection (SAML or OpenID Connect)' },
  { value: 'directory', label: 'Directory sync (SCIM)' },
  { value: 'domain', label: 'Verify an email domain' },
];

const PURPOSE_LABELS: Record<TSetupLinkPurpose, string> = { sso: 'SSO connection', directory: 'Directory sync', domain: 'Email domain' };

type Expiry = '1' | '4' | '8' | '24';

const EXPIRY_OPTIONS: SelectOption<Expiry>[] = [
  { value: '1', label: 'In 1 hour' },
  { value: '4', label: 'In 4 hours' },
  { value: '8', label: 'In 8 hours' },
  { value: '24', label: `In ${SETUP_LINK_MAX_HOURS} hours` },
];

const STATUS_PILLS: Record<TSetupLinkStatus, string> = {
  unused: 'pill--on',
  opened: 'pill--on',
  expired: 'pill--off',
  revoked: 'pill--off',
};

const ZCreateForm = z.object({ label: z.union([z.literal(''), ZCreateSetupLinkRequest.shape.label.unwrap()]) });

/**
 * Organization settings -> Setup links (docs/enterprise.md "Setup links"): a link for the
 * customer's IT admin to set up SSO, directory sync or a domain on a hosted page, without a
 * console account. Create one (its URL shown once), see whether it was opened, revoke it.
 */
export function SetupLinksPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const organization = active.organization;
  const [creating, setCreating] = useState(false);
  const [revealed, setRevealed] = useState<{ title: string; value: string } | null>(null);
  const links = useQuery(
    trpc.setupLinks.list.queryOptions({ organization_slug: organization?.slug, limit: 200 }, { enabled: organization !== null }),
  );
  return (
    <div data-testid="page-setup-links">
      <PageHeader
        title="Setup links"
        description="Send your customer's IT admin a link to set up SSO, directory sync or a domain themselves. A link opens in one browser, for one thing, for a day at most."
        actions={
          organization && (
            <CreateSetupLinkDialog slug={organization.slug} open={creating} onOpenChange={setCreating} onCreated={setRevealed} />
          )
        }
      />
      <SecretOnceDialog
        revealed={revealed}
        onDismiss={() => setRevealed(null)}
        description="Send this link to the IT admin. The first browser that opens it keeps it; anyone else who opens it is refused."
        label="Setup link"
        testId="setup-link-revealed"
        secretTestId="setup-link-url"
      />
      {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
      {links.isError && <ErrorPanel error={links.error} title="Could not load the setup links" onRetry={() => void links.refetch()} />}
      {(active.isLoading || links.isPending) && !links.isError && organization !== null && (
        <Skeleton label="Loading the setup links…" testId="setup-links-loading" />
      )}
      {links.data && links.data.data.length === 0 && (
        <p className="muted" data-testid="setup-links-empty">
          No setup links yet.
        </p>
      )}
      {links.data && organization && links.data.data.length > 0 && (
        <table className="table" data-testid="setup-links-list">
          <thead>
            <tr>
              <th>For</th>
              <th>Sets up</th>
              <th>Status</th>
              <th>Expires</th>
              <th>Created by</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {links.data.data.map((link) => (
              <LinkRow key={link.id} link={link} slug={organization.slug} />
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function CreateSetupLinkDialog({
  slug,
  open,
  onOpenChange,
  onCreated,
}: {
  slug: string;
  open: boolean;
  onOpenChange: (open: boolean) => void;
  onCreated: (revealed: { title: string; value: string }) => void;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [purpose, setPurpose] = useState<TSetupLinkPurpose>('sso');
  const [expiry, setExpiry] = useState<Expiry>('24');
  const empty = { label: '' };
  const form = useForm({ resolver: zodResolver(ZCreateForm), defaultValues: empty });
  const create = useMutation(trpc.setupLinks.create.mutationOptions());
  const { close, settle } = dialogMutation({ onOpenChange, forget: () => form.reset(empty), mutation: create });
  const submit = form.handleSubmit(async (values) => {
    const created = await settle(
      create.mutateAsync({
        organization_slug: slug,
        purpose,
        expiresInHours: Number(expiry),
        ...(values.label ? { label: values.label } : {}),
      }),
    );
    if (created) {
      onCreated({ title: `Setup link for ${created.label}`, value: created.url });
      await queryClient.invalidateQueries({ queryKey: trpc.setupLinks.list.pathKey() });
    }
  });
  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={
        <button type="button" className="button button--primary" data-testid="setup-link-create-open">
          Create setup link
        </button>
      }
      title="Create a setup link"
      description="The IT admin who opens it can set up this one thing for your organization, and nothing else."
      onSubmit={submit}
      submitLabel="Create link"
      pending={create.isPending}
      pendingLabel="Creating…"
      error={create.error}
      errorTitle="Could not create the link"
      testId="setup-link-create"
    >
      <Field label="Sets up" id="setup-link-purpose" testId="setup-link-purpose">
        {(control) => (
          <Select {...control} value={purpose} options={PURPOSE_OPTIONS} onValueChange={setPurpose} testId="setup-link-purpose" />
        )}
      </Field>
      <Field label="Expires" id="setup-link-expiry" testId="setup-link-expiry">
        {(control) => <Select {...control} value={expiry} options={EXPIRY_OPTIONS} onValueChange={setExpiry} testId="setup-link-expiry" />}
      </Field>
      <Field label="For (optional)" id="setup-link-label" error={form.formState.errors.label?.message} testId="setup-link-label">
        {(control) => (
          <input {...control} autoComplete="off" placeholder="Acme IT" data-testid="setup-link-label" {...form.register('label')} />
        )}
      </Field>
    </FormDialog>
  );
}

function LinkRow({ link, slug }: { link: TSetupLink; slug: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const revoke = useMutation(
    trpc.setupLinks.revoke.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.setupLinks.list.pathKey() }),
    }),
  );
  const [revoking, setRevoking] = useState(false);
  const live = link.status === 'unused' || link.status === 'opened';
  return (
    <tr data-testid="setup-link" data-status={link.status} data-purpose={link.purpose}>
      <td>{link.label}</td>
      <td>{PURPOSE_LABELS[link.purpose]}</td>
      <td>
        <span className={`pill ${STATUS_PILLS[link.status]}`} data-testid="setup-link-status">
          {link.status}
        </span>{' '}
        {link.openedAt && (
          <span className="muted">
            <When at={link.openedAt} empty="" />
          </span>
        )}
      </td>
      <td>
        <When at={link.expiresAt} empty="—" />
      </td>
      <td>{link.createdBy ?? '—'}</td>
      <td>
        {live && (
          <button
            type="button"
            className="button button--danger button--small"
            data-testid="setup-link-revoke"
            onClick={() => setRevoking(true)}
          >
            Revoke…
          </button>
        )}
        <ConfirmDialog
          open={revoking}
          onOpenChange={setRevoking}
          title={`Revoke the setup link for ${link.label}?`}
          consequence="It stops working at once, also in the browser that opened it. What was set up with it stays."
          confirmLabel="Revoke link"
          testId="setup-link-revoke-dialog"
          onConfirm={() => revoke.mutateAsync({ id: link.id, organization_slug: slug })}
        />
        {revoke.error && <ErrorPanel error={revoke.error} title="Could not revoke the link" />}
      </td>
    </tr>
  );
}

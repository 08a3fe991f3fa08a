import { zodResolver } from '@hookform/resolvers/zod';
import {
  SETUP_LINK_MAX_HOURS,
  type TSetupLink,
  type TSetupLinkPurpose,
  type TSetupLinkStatus,
  ZCreateSetupLinkRequest,
} from '@svc/contracts/setup-links';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { z } from 'zod';
import { actionsColumn, columnHelper, whenColumn } from '../../components/data-table.tsx';
import { dialogMutation, FormDialog } from '../../components/dialog.tsx';
import { Field } from '../../components/field.tsx';
import { ListPage } from '../../components/list-page.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { usePager } from '../../components/pager.tsx';
import { RowActions } from '../../components/row-actions.tsx';
import { SecretOnceDialog } from '../../components/secret-once.tsx';
import { Select, type SelectOption } from '../../components/select.tsx';
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

const PAGE_SIZE = 50;

const ZCreateForm = z.object({ label: z.union([z.literal(''), ZCreateSetupLinkRequest.shape.label.unwrap()]) });

/** The list's columns: who it is for, what it sets up, its status, when it expires, who made it, revoke. */
function setupLinkColumns() {
  const column = columnHelper<TSetupLink>();
  return column.columns([
    column.accessor('label', {
      header: 'For',
      sortFn: 'text',
      cell: (info) => <span title={`Created ${new Date(info.row.original.createdAt).toLocaleString()}`}>{info.getValue()}</span>,
    }),
    column.accessor('purpose', {
      header: 'Sets up',
      sortFn: 'text',
      meta: { width: '10rem' },
      cell: (info) => PURPOSE_LABELS[info.getValue()],
    }),
    column.accessor('status', {
      header: 'Status',
      sortFn: 'text',
      meta: { width: '7.5rem' },
      cell: (info) => (
        <span
          className={`pill ${STATUS_PILLS[info.getValue()]}`}
          data-testid="setup-link-status"
          title={info.row.original.openedAt ? `Opened ${new Date(info.row.original.openedAt).toLocaleString()}` : undefined}
        >
          {info.getValue()}
        </span>
      ),
    }),
    // A revoked link's expiry no longer matters.
    whenColumn(column, 'expiresAt', 'Expires', {
      width: '9rem',
      empty: '—',
      shown: (link, at) => (link.revokedAt ? null : at),
      testId: 'setup-link-expires',
    }),
    column.accessor('createdBy', {
      header: 'Created by',
      enableSorting: false,
      meta: { width: '14rem' },
      cell: (info) => info.getValue() ?? '—',
    }),
    actionsColumn(column, (link) => <SetupLinkActions link={link} />),
  ]);
}

/**
 * Organization settings -> Setup links (docs/enterprise.md "Setup links"): a link for the
 * customer's IT admin to set up SSO, directory sync or a domain on a hosted page, without a
 * console account. Create one (its URL shown once), see whether it was opened, revoke it.
 */
export function SetupLinksPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const organization = active.organization;
  const pager = usePager();
  const [creating, setCreating] = useState(false);
  const [revealed, setRevealed] = useState<{ title: string; value: string } | null>(null);
  const links = useQuery({
    ...trpc.setupLinks.list.queryOptions(
      { organization_slug: organization?.slug, limit: PAGE_SIZE, cursor: pager.cursor },
      { enabled: organization !== null },
    ),
    placeholderData: keepPreviousData,
  });
  const [columns] = useState(setupLinkColumns);
  return (
    <div data-testid="page-setup-links">
      <PageHeader
        title="Setup links"
        description="Send your customer's IT admin a link to set up SSO, directory sync or a domain themselves. A link opens in one browser, for one thing, for a day at most."
        actions={
          organization && (
            <CreateSetupLinkDialog
              slug={organization.slug}
              open={creating}
              onOpenChange={setCreating}
              onCreated={(created) => {
                setRevealed(created);
                pager.reset();
              }}
            />
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
      <ListPage
        testId="setup-links"
        noun="setup links"
        workspace={active}
        query={links}
        pager={pager}
        empty={{
          title: 'No setup links yet.',
          next: "Create one for your customer's IT admin; its URL is shown once.",
          action: { label: 'Create setup link', onClick: () => setCreating(true) },
        }}
        rowKey={(link) => link.id}
        table={{
          columns,
          rowAttributes: (link) => ({ 'data-testid': 'setup-link', 'data-status': link.status, 'data-purpose': link.purpose }),
          minWidth: '52rem',
        }}
      />
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

/** The row's "⋯" menu: Revoke link…, confirmed; only for a link that still works. */
function SetupLinkActions({ link }: { link: TSetupLink }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const revoke = useMutation(
    trpc.setupLinks.revoke.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.setupLinks.list.pathKey() }),
    }),
  );
  if (link.status !== 'unused' && link.status !== 'opened') {
    return null;
  }
  return (
    <RowActions
      name={link.label}
      testId="setup-link-actions"
      actions={[
        {
          label: 'Revoke link…',
          testId: 'setup-link-revoke',
          destructive: true,
          confirm: {
            title: `Revoke the setup link for ${link.label}?`,
            consequence: 'It stops working at once, also in the browser that opened it. What was set up with it stays.',
            confirmLabel: 'Revoke link',
            testId: 'setup-link-revoke-dialog',
            onConfirm: () => revoke.mutateAsync({ id: link.id }),
          },
        },
      ]}
    />
  );
}

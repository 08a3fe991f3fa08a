import { zodResolver } from '@hookform/resolvers/zod';
import { type TDomain, type TDomainPolicy, ZCreateDomainRequest } from '@svc/contracts/domains';
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
import { Select, type SelectOption } from '../../components/select.tsx';
import { SetupLinkHint } from '../../components/setup-link-hint.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { useActiveOrganization } from '../../lib/organization.ts';
import { useRoleOptions } from '../../lib/roles.ts';
import { useTRPC } from '../../trpc.ts';

const POLICY_OPTIONS: SelectOption<TDomainPolicy>[] = [
  { value: 'none', label: 'Nothing (ordinary sign-in)' },
  { value: 'auto_join', label: 'Join this organization automatically' },
  { value: 'require_sso', label: 'Require SSO (enforced once SSO connections exist)' },
];

const CHECK_ERRORS: Record<string, string> = {
  record_not_found: 'The TXT record was not found.',
  token_mismatch: 'A TXT record was found, but not with this value.',
  dns_timeout: 'DNS did not answer in time.',
  dns_error: 'DNS answered with an error.',
};

const ZAddDomainForm = z.object({ domain: ZCreateDomainRequest.shape.domain });

/**
 * Organization settings -> Domains (docs/enterprise.md "Domains"): add an email domain, create
 * the TXT record shown (copy buttons), verify it, choose what the domain's people get at sign-in,
 * delete it.
 */
export function DomainsPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const organization = active.organization;
  const [adding, setAdding] = useState(false);
  const domains = useQuery(
    trpc.domains.list.queryOptions({ organization_slug: organization?.slug, limit: 200 }, { enabled: organization !== null }),
  );

  return (
    <div data-testid="page-domains">
      <PageHeader
        title="Domains"
        description="The email domains your organization owns: prove each with a DNS TXT record, then choose what people signing in with an address there get."
        actions={organization && <AddDomainDialog slug={organization.slug} open={adding} onOpenChange={setAdding} />}
      />
      <SetupLinkHint what="your DNS" />
      {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
      {domains.isError && <ErrorPanel error={domains.error} title="Could not load the domains" onRetry={() => void domains.refetch()} />}
      {(active.isLoading || domains.isPending) && !domains.isError && organization !== null && (
        <Skeleton label="Loading the domains…" testId="domains-loading" />
      )}
      {domains.data && domains.data.data.length === 0 && (
        <p className="muted" data-testid="domains-empty">
          No domains yet. Add your organization's email domain (acme.com), then create the TXT record svc shows.
        </p>
      )}
      {domains.data && organization && (
        <div className="detail-stack" data-testid="domains-list">
          {domains.data.data.map((domain) => (
            <DomainPanel key={domain.id} domain={domain} slug={organization.slug} />
          ))}
        </div>
      )}
    </div>
  );
}

function AddDomainDialog({ slug, open, onOpenChange }: { slug: string; open: boolean; onOpenChange: (open: boolean) => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const empty = { domain: '' };
  const form = useForm({ resolver: zodResolver(ZAddDomainForm), defaultValues: empty });
  const create = useMutation(trpc.domains.create.mutationOptions());
  const { close, settle } = dialogMutation({ onOpenChange, forget: () => form.reset(empty), mutation: create });
  const submit = form.handleSubmit(async (values) => {
    const created = await settle(create.mutateAsync({ organization_slug: slug, domain: values.domain }));
    if (created) {
      toast.success(`${created.domain} added: create its TXT record, then verify`);
      await queryClient.invalidateQueries({ queryKey: trpc.domains.list.pathKey() });
    }
  });
  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={
        <button type="button" className="button button--primary" data-testid="domains-add-open">
          Add domain
        </button>
      }
      title="Add a domain"
      description="The domain people at your organization have email addresses at. svc then names a DNS TXT record that proves you own it."
      onSubmit={submit}
      submitLabel="Add domain"
      pending={create.isPending}
      pendingLabel="Adding…"
      error={create.error}
      errorTitle="Could not add the domain"
      testId="domains-add"
    >
      <Field label="Domain" id="domains-add-domain" error={form.formState.errors.domain?.message} testId="domains-add-domain">
        {(control) => (
          <input {...control} autoComplete="off" placeholder="acme.com" data-testid="domains-add-domain" {...form.register('domain')} />
        )}
      </Field>
    </FormDialog>
  );
}

/** One domain: its status, the record to create, verify, policy, delete. */
function DomainPanel({ domain, slug }: { domain: TDomain; slug: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.domains.list.pathKey() });
  const verify = useMutation(trpc.domains.verify.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.domains.delete.mutationOptions({ onSuccess: refresh }));
  const [deleting, setDeleting] = useState(false);
  const verified = domain.status === 'verified';

  return (
    <section className="panel" data-testid="domain" data-domain={domain.domain} data-status={domain.status}>
      <div className="panel__header">
        <h2 className="panel__title">
          {/* The name as stored (lower-case): the title style's capitals would misspell it. */}
          <span style={{ textTransform: 'none' }} data-testid="domain-name">
            {domain.domain}
          </span>{' '}
          <span className={`pill ${verified ? 'pill--on' : 'pill--off'}`} data-testid="domain-status">
            {domain.status}
          </span>
        </h2>
        <div className="panel__actions">
          <button
            type="button"
            className="button"
            disabled={verify.isPending}
            data-testid="domain-verify"
            onClick={() => verify.mutate({ id: domain.id, organization_slug: slug })}
          >
            {verify.isPending ? 'Checking…' : verified ? 'Check again' : 'Verify'}
          </button>
          <button type="button" className="button button--danger" data-testid="domain-delete" onClick={() => setDeleting(true)}>
            Delete…
          </button>
        </div>
      </div>
      {!verified && (
        <p className="muted">
          Create this record at your domain's DNS host, then press Verify. DNS changes can take a few minutes to appear.
        </p>
      )}
      <dl className="facts">
        <dt>Type</dt>
        <dd>TXT</dd>
        <dt>Name</dt>
        <dd>
          <code data-testid="domain-record-name">{domain.verification.name}</code>{' '}
          <CopyButton value={domain.verification.name} label="Copy record name" testId="domain-record-name-copy" />
        </dd>
        <dt>Value</dt>
        <dd>
          <code data-testid="domain-record-value">{domain.verification.value}</code>{' '}
          <CopyButton value={domain.verification.value} label="Copy record value" testId="domain-record-value-copy" />
        </dd>
        <dt>Verified</dt>
        <dd data-testid="domain-verified-at">
          <When at={domain.verifiedAt} empty="not yet" />
        </dd>
        <dt>Last checked</dt>
        <dd>
          <When at={domain.lastCheckedAt} empty="never" />
          {domain.lastCheckError && (
            <span className="muted" data-testid="domain-check-error">
              {' '}
              {CHECK_ERRORS[domain.lastCheckError] ?? domain.lastCheckError}
            </span>
          )}
        </dd>
      </dl>
      {verify.error && <ErrorPanel error={verify.error} title="Could not verify the domain" />}
      <PolicyEditor domain={domain} slug={slug} />
      <ConfirmDialog
        open={deleting}
        onOpenChange={setDeleting}
        title={`Delete the domain ${domain.domain}?`}
        consequence="Its policy stops applying at once and, if verified, another organization may verify it. Adding it again needs a new TXT record."
        confirmLabel="Delete domain"
        typeToConfirm={domain.domain}
        testId="domain-delete-dialog"
        onConfirm={() => remove.mutateAsync({ id: domain.id, organization_slug: slug })}
      />
    </section>
  );
}

/** The policy selector, with the role auto-join gives; saved with its own button. */
function PolicyEditor({ domain, slug }: { domain: TDomain; slug: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const roles = useRoleOptions(slug);
  const [policy, setPolicy] = useState<TDomainPolicy>(domain.policy);
  const [roleKey, setRoleKey] = useState<string>(domain.autoJoinRoleKey ?? 'org_member');
  const update = useMutation(
    trpc.domains.update.mutationOptions({
      onSuccess: async () => {
        toast.success(`Policy of ${domain.domain} saved`);
        await queryClient.invalidateQueries({ queryKey: trpc.domains.list.pathKey() });
      },
    }),
  );
  const changed = policy !== domain.policy || (policy === 'auto_join' && roleKey !== domain.autoJoinRoleKey);
  return (
    <div className="form-grid" style={{ marginTop: 16 }} data-testid="domain-policy">
      <Field label="People signing in with a verified email at this domain" id={`domain-policy-${domain.id}`} testId="domain-policy-field">
        {(control) => (
          <Select {...control} value={policy} options={POLICY_OPTIONS} onValueChange={setPolicy} testId="domain-policy-select" />
        )}
      </Field>
      {policy === 'auto_join' && (
        <Field label="Join with the role" id={`domain-role-${domain.id}`} testId="domain-role-field">
          {(control) => (
            <Select {...control} value={roleKey} options={roles.options} onValueChange={setRoleKey} testId="domain-role-select" />
          )}
        </Field>
      )}
      {policy === 'require_sso' && (
        <p className="muted">
          Stored now; svc enforces it once your organization has an SSO connection. Until then it works like "Nothing".
        </p>
      )}
      {policy === 'auto_join' && !domain.verifiedAt && <p className="muted">Applies once the domain is verified.</p>}
      {update.error && <ErrorPanel error={update.error} title="Could not save the policy" />}
      <div className="panel__actions">
        <button
          type="button"
          className="button button--primary"
          disabled={!changed || update.isPending}
          data-testid="domain-policy-save"
          onClick={() =>
            update.mutate({
              id: domain.id,
              organization_slug: slug,
              policy,
              ...(policy === 'auto_join' ? { autoJoinRoleKey: roleKey } : {}),
            })
          }
        >
          {update.isPending ? 'Saving…' : 'Save policy'}
        </button>
      </div>
    </div>
  );
}

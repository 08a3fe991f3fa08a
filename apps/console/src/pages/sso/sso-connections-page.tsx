import { zodResolver } from '@hookform/resolvers/zod';
import { type TSsoConnection, ZCreateSsoConnectionRequest, ZOidcIdpInput, ZSamlIdpInput } from '@svc/contracts/sso';
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
import { useTRPC } from '../../trpc.ts';

type Protocol = 'saml' | 'oidc';

const PROTOCOL_OPTIONS: SelectOption<Protocol>[] = [
  { value: 'saml', label: 'SAML 2.0' },
  { value: 'oidc', label: 'OpenID Connect' },
];

const ZAddConnectionForm = z.object({
  name: ZCreateSsoConnectionRequest.shape.name,
  metadataUrl: z.union([z.literal(''), ZSamlIdpInput.shape.metadataUrl.unwrap()]),
  metadataXml: z.string().max(256 * 1024),
  issuer: z.union([z.literal(''), ZOidcIdpInput.shape.issuer]),
  clientId: z.string().max(500),
  clientSecret: z.string().max(2000),
});
type AddConnectionForm = z.infer<typeof ZAddConnectionForm>;

/**
 * Organization settings -> SSO connections (docs/enterprise.md "SSO connections"): add a SAML or
 * OIDC connection to the organization's IdP, copy the URLs the IdP needs, test it with a real
 * sign-in, enable or disable it, delete it.
 */
export function SsoConnectionsPage() {
  const trpc = useTRPC();
  const active = useActiveOrganization();
  const organization = active.organization;
  const [adding, setAdding] = useState(false);
  const connections = useQuery(
    trpc.ssoConnections.list.queryOptions({ organization_slug: organization?.slug, limit: 100 }, { enabled: organization !== null }),
  );
  return (
    <div data-testid="page-sso-connections">
      <PageHeader
        title="SSO connections"
        description="Your organization's identity providers: people with an email at a verified domain sign in there, and join as members."
        actions={organization && <AddConnectionDialog slug={organization.slug} open={adding} onOpenChange={setAdding} />}
      />
      <SetupLinkHint what="your identity provider" />
      {active.error && <ErrorPanel error={active.error} title="Could not load your workspace" />}
      {connections.isError && (
        <ErrorPanel error={connections.error} title="Could not load the connections" onRetry={() => void connections.refetch()} />
      )}
      {(active.isLoading || connections.isPending) && !connections.isError && organization !== null && (
        <Skeleton label="Loading the connections…" testId="sso-loading" />
      )}
      {connections.data && connections.data.data.length === 0 && (
        <p className="muted" data-testid="sso-empty">
          No connections yet. Verify your email domain under Domains, then add your identity provider here.
        </p>
      )}
      {connections.data && organization && (
        <div className="detail-stack" data-testid="sso-list">
          {connections.data.data.map((connection) => (
            <ConnectionPanel key={connection.id} connection={connection} slug={organization.slug} />
          ))}
        </div>
      )}
    </div>
  );
}

function AddConnectionDialog({ slug, open, onOpenChange }: { slug: string; open: boolean; onOpenChange: (open: boolean) => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [protocol, setProtocol] = useState<Protocol>('saml');
  const empty: AddConnectionForm = { name: '', metadataUrl: '', metadataXml: '', issuer: '', clientId: '', clientSecret: '' };
  const form = useForm({ resolver: zodResolver(ZAddConnectionForm), defaultValues: empty });
  const create = useMutation(trpc.ssoConnections.create.mutationOptions());
  const { close, settle } = dialogMutation({ onOpenChange, forget: () => form.reset(empty), mutation: create });
  const submit = form.handleSubmit(async (values) => {
    const saml = {
      ...(values.metadataUrl ? { metadataUrl: values.metadataUrl } : {}),
      ...(values.metadataXml ? { metadataXml: values.metadataXml } : {}),
    };
    const created = await settle(
      create.mutateAsync(
        protocol === 'saml'
          ? { organization_slug: slug, protocol, name: values.name, saml }
          : {
              organization_slug: slug,
              protocol,
              name: values.name,
              oidc: { issuer: values.issuer, clientId: values.clientId, clientSecret: values.clientSecret },
            },
      ),
    );
    if (created) {
      toast.success(`${created.name} added: give your IdP the URLs shown, then test it`);
      await queryClient.invalidateQueries({ queryKey: trpc.ssoConnections.list.pathKey() });
    }
  });
  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={
        <button type="button" className="button button--primary" data-testid="sso-add-open">
          Add connection
        </button>
      }
      title="Add an SSO connection"
      description="SAML: your IdP's metadata URL, or its metadata XML. OpenID Connect: the issuer, and the client your IdP registered for svc."
      onSubmit={submit}
      submitLabel="Add connection"
      pending={create.isPending}
      pendingLabel="Adding…"
      error={create.error}
      errorTitle="Could not add the connection"
      testId="sso-add"
    >
      <Field label="Name" id="sso-add-name" error={form.formState.errors.name?.message} testId="sso-add-name">
        {(control) => <input {...control} autoComplete="off" placeholder="Okta" data-testid="sso-add-name" {...form.register('name')} />}
      </Field>
      <Field label="Protocol" id="sso-add-protocol" testId="sso-add-protocol">
        {(control) => (
          <Select {...control} value={protocol} options={PROTOCOL_OPTIONS} onValueChange={setProtocol} testId="sso-add-protocol" />
        )}
      </Field>
      {protocol === 'saml' ? (
        <>
          <Field
            label="IdP metadata URL"
            id="sso-add-metadata-url"
            error={form.formState.errors.metadataUrl?.message}
            testId="sso-add-metadata-url"
          >
            {(control) => (
              <input {...control} autoComplete="off" placeholder="https://idp.example.com/metadata" {...form.register('metadataUrl')} />
            )}
          </Field>
          <Field
            label="or IdP metadata XML"
            id="sso-add-metadata-xml"
            error={form.formState.errors.metadataXml?.message}
            testId="sso-add-metadata-xml"
          >
            {(control) => <textarea {...control} rows={4} {...form.register('metadataXml')} />}
          </Field>
        </>
      ) : (
        <>
          <Field label="Issuer" id="sso-add-issuer" error={form.formState.errors.issuer?.message} testId="sso-add-issuer">
            {(control) => <input {...control} autoComplete="off" placeholder="https://idp.example.com" {...form.register('issuer')} />}
          </Field>
          <Field label="Client id" id="sso-add-client-id" testId="sso-add-client-id">
            {(control) => <input {...control} autoComplete="off" {...form.register('clientId')} />}
          </Field>
          <Field label="Client secret" id="sso-add-client-secret" testId="sso-add-client-secret">
            {(control) => <input {...control} type="password" autoComplete="off" {...form.register('clientSecret')} />}
          </Field>
        </>
      )}
    </FormDialog>
  );
}

/** A URL the IdP needs, with its copy button. */
function Copyable({ label, value, testId }: { label: string; value: string; testId: string }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>
        <code data-testid={testId}>{value}</code> <CopyButton value={value} label={`Copy ${label}`} testId={`${testId}-copy`} />
      </dd>
    </>
  );
}

/** One connection: what the IdP needs, test, enable or disable, delete. */
function ConnectionPanel({ connection, slug }: { connection: TSsoConnection; slug: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.ssoConnections.list.pathKey() });
  const update = useMutation(trpc.ssoConnections.update.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.ssoConnections.delete.mutationOptions({ onSuccess: refresh }));
  const test = useMutation(
    trpc.ssoConnections.test.mutationOptions({
      onSuccess: (started) => {
        // A real sign-in at the IdP, in a new tab; its last page shows what the IdP sent.
        window.open(started.url, '_blank', 'noopener');
      },
    }),
  );
  const [deleting, setDeleting] = useState(false);
  return (
    <section className="panel" data-testid="sso-connection" data-protocol={connection.protocol}>
      <div className="panel__header">
        <h2 className="panel__title">
          <span data-testid="sso-connection-name">{connection.name}</span>{' '}
          <span className={`pill ${connection.enabled ? 'pill--on' : 'pill--off'}`}>{connection.enabled ? 'enabled' : 'disabled'}</span>
        </h2>
        <div className="panel__actions">
          <button
            type="button"
            className="button"
            disabled={test.isPending || !connection.enabled}
            data-testid="sso-connection-test"
            onClick={() => test.mutate({ id: connection.id, organization_slug: slug })}
          >
            {test.isPending ? 'Starting…' : 'Test connection'}
          </button>
          <button
            type="button"
            className="button"
            disabled={update.isPending}
            data-testid="sso-connection-toggle"
            onClick={() => update.mutate({ id: connection.id, organization_slug: slug, enabled: !connection.enabled })}
          >
            {connection.enabled ? 'Disable' : 'Enable'}
          </button>
          <button type="button" className="button button--danger" data-testid="sso-connection-delete" onClick={() => setDeleting(true)}>
            Delete…
          </button>
        </div>
      </div>
      <dl className="facts">
        <dt>Protocol</dt>
        <dd>{connection.protocol === 'saml' ? 'SAML 2.0' : 'OpenID Connect'}</dd>
        {connection.saml && (
          <>
            <Copyable label="ACS URL" value={connection.saml.acsUrl} testId="sso-acs-url" />
            <Copyable label="SP entity id" value={connection.saml.spEntityId} testId="sso-sp-entity-id" />
            <Copyable label="SP metadata" value={connection.saml.spMetadataUrl} testId="sso-sp-metadata-url" />
            <dt>IdP</dt>
            <dd>{connection.saml.idpEntityId}</dd>
            <dt>IdP-initiated sign-in</dt>
            <dd>{connection.saml.allowIdpInitiated ? 'allowed' : 'refused'}</dd>
          </>
        )}
        {connection.oidc && (
          <>
            <Copyable label="Redirect URI" value={connection.oidc.redirectUri} testId="sso-redirect-uri" />
            <dt>Issuer</dt>
            <dd>{connection.oidc.issuer}</dd>
            <dt>Client id</dt>
            <dd>{connection.oidc.clientId}</dd>
          </>
        )}
        <dt>New members get</dt>
        <dd>{connection.defaultRoleKey}</dd>
        <dt>Last sign-in</dt>
        <dd data-testid="sso-last-sign-in">
          <When at={connection.lastSignInAt} empty="never" />
        </dd>
        <dt>Sign-ins, last 30 days</dt>
        <dd data-testid="sso-sign-ins-30d">{connection.signInsLast30Days}</dd>
      </dl>
      {test.error && <ErrorPanel error={test.error} title="Could not start the test" />}
      {update.error && <ErrorPanel error={update.error} title="Could not change the connection" />}
      <ConfirmDialog
        open={deleting}
        onOpenChange={setDeleting}
        title={`Delete the connection ${connection.name}?`}
        consequence="Its people can no longer sign in through it. Members it added stay members."
        confirmLabel="Delete connection"
        typeToConfirm={connection.name}
        testId="sso-connection-delete-dialog"
        onConfirm={() => remove.mutateAsync({ id: connection.id, organization_slug: slug })}
      />
    </section>
  );
}

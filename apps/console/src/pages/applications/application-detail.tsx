import { zodResolver } from '@hookform/resolvers/zod';
import { type TApplication, type TApplicationWithSecret, ZApplicationSettingsForm } from '@svc/contracts/applications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { CopyButton } from '../../components/copy-button.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { useTRPC } from '../../trpc.ts';

type Props = {
  id: string;
  organizationSlug: string;
  onClose: () => void;
  /** Called with the new secret key (shown once by the page). */
  onRotated: (rotated: TApplicationWithSecret) => void | Promise<void>;
};

/** One application: its keys, settings (name, logo, allowlists, production provider), status and secret rotation. */
export function ApplicationDetail({ id, organizationSlug, onClose, onRotated }: Props) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const application = useQuery(trpc.applications.get.queryOptions({ id, organization_slug: organizationSlug }));
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.applications.pathKey() });
  const setStatus = useMutation(trpc.applications.setStatus.mutationOptions({ onSuccess: refresh }));
  const rotate = useMutation(trpc.applications.rotateSecret.mutationOptions({ onSuccess: refresh }));
  // The issuer is PUBLIC_URL: svc itself is every application's OpenID Provider.
  const config = useQuery(trpc.service.config.queryOptions());
  const issuer = config.data?.publicUrl.replace(/\/+$/, '');

  return (
    <section className="panel" data-testid="application-detail" data-application-id={id}>
      <div style={{ display: 'flex', justifyContent: 'space-between', alignItems: 'baseline', gap: 16 }}>
        <h2 className="panel__title">{application.data ? application.data.name : 'Application'}</h2>
        <button type="button" className="button" onClick={onClose} data-testid="application-detail-close">
          Close
        </button>
      </div>
      {application.isPending && <p className="loading">Loading the application…</p>}
      {application.isError && (
        <ErrorPanel error={application.error} title="Could not load the application" onRetry={() => void application.refetch()} />
      )}
      {application.data && (
        <div style={{ display: 'grid', gap: 16 }}>
          <dl className="facts" data-testid="application-keys">
            <dt>Status</dt>
            <dd>
              <StatusPill status={application.data.status} testId="application-detail-status" />
            </dd>
            <dt>Slug</dt>
            <dd>
              <code>{application.data.slug}</code>
            </dd>
            <dt>Publishable key</dt>
            <dd>
              <code data-testid="application-publishable-key">{application.data.publishableKey}</code>{' '}
              <span className="muted">public: put it in your frontend</span>
            </dd>
            <dt>Secret key</dt>
            <dd>
              <code data-testid="application-secret-prefix">{application.data.secretKeyPrefix}…</code>{' '}
              <span className="muted">shown once when created or rotated; svc keeps only a hash</span>
            </dd>
          </dl>
          <dl className="facts" data-testid="application-oidc">
            <dt>Issuer</dt>
            <dd>{issuer ? <Copyable value={issuer} testId="application-oidc-issuer" /> : <span className="muted">loading…</span>}</dd>
            <dt>Client ID</dt>
            <dd>
              <Copyable value={application.data.id} testId="application-oidc-client-id" />
            </dd>
            <dt>Discovery URL</dt>
            <dd>
              {issuer ? (
                <Copyable value={`${issuer}/.well-known/openid-configuration`} testId="application-oidc-discovery" />
              ) : (
                <span className="muted">loading…</span>
              )}
            </dd>
            <dt>Client type</dt>
            <dd data-testid="application-oidc-client-type">
              {application.data.clientType === 'confidential' ? (
                <>
                  confidential <span className="muted">client secret: the secret key (client_secret_basic or client_secret_post)</span>
                </>
              ) : (
                <>
                  public <span className="muted">no secret; PKCE (S256) required</span>
                </>
              )}
            </dd>
            <dt>Redirect URLs</dt>
            <dd data-testid="application-oidc-redirect-urls">
              <UrlList urls={application.data.redirectUrls} />
            </dd>
            <dt>Allowed origins</dt>
            <dd data-testid="application-oidc-allowed-origins">
              <UrlList urls={application.data.allowedOrigins} />
            </dd>
            <dt>Post-logout redirect URLs</dt>
            <dd data-testid="application-oidc-post-logout-urls">
              <UrlList urls={application.data.postLogoutRedirectUrls} />
            </dd>
            <dt>Back-channel logout URL</dt>
            <dd data-testid="application-oidc-backchannel-url">
              {application.data.backchannelLogoutUrl ? (
                <code>{application.data.backchannelLogoutUrl}</code>
              ) : (
                <span className="muted">none</span>
              )}
            </dd>
          </dl>
          <div style={{ display: 'flex', gap: 8, flexWrap: 'wrap', alignItems: 'center' }}>
            {application.data.status === 'active' ? (
              // A real sign-in to this application through svc's OpenID Provider, shown on svc:
              // a full page navigation, since the browser goes through svc's authorization endpoint.
              <a
                className="button button--primary"
                href={`${issuer ?? ''}/oidc/try/${encodeURIComponent(id)}`}
                data-testid="application-try-sign-in"
                title="Signs you in to this application through svc and shows the ID token, access token and userinfo"
              >
                Try sign-in
              </a>
            ) : (
              <span className="muted" data-testid="application-try-sign-in-disabled">
                Enable the application to try signing in.
              </span>
            )}
            {application.data.status === 'active' ? (
              <ConfirmButton
                question={`Disable ${application.data.name}?`}
                consequence="Its publishable and secret keys are refused (409 application_disabled) on every API process until you enable it again."
                confirmLabel="Disable"
                disabled={setStatus.isPending}
                onConfirm={() =>
                  setStatus.mutateAsync({ id, organization_slug: organizationSlug, status: 'disabled' }).catch(() => undefined)
                }
                testId="application-disable"
              >
                Disable
              </ConfirmButton>
            ) : (
              <ConfirmButton
                question={`Enable ${application.data.name}?`}
                consequence="Its keys work again at once."
                confirmLabel="Enable"
                disabled={setStatus.isPending}
                onConfirm={() =>
                  setStatus.mutateAsync({ id, organization_slug: organizationSlug, status: 'active' }).catch(() => undefined)
                }
                testId="application-enable"
              >
                Enable
              </ConfirmButton>
            )}
            <ConfirmButton
              question={`Rotate the secret key of ${application.data.name}?`}
              consequence="A new secret key is shown once; the current one stops working at once, so update every backend that uses it."
              confirmLabel="Rotate"
              disabled={rotate.isPending}
              onConfirm={async () => {
                const rotated = await rotate.mutateAsync({ id, organization_slug: organizationSlug }).catch(() => undefined);
                if (rotated) {
                  await onRotated(rotated);
                }
              }}
              testId="application-rotate"
            >
              Rotate secret key
            </ConfirmButton>
          </div>
          {setStatus.isError && <ErrorPanel error={setStatus.error} title="Could not change the status" />}
          {rotate.isError && <ErrorPanel error={rotate.error} title="Could not rotate the secret key" />}
          <SettingsForm key={application.data.id} application={application.data} organizationSlug={organizationSlug} onSaved={refresh} />
        </div>
      )}
    </section>
  );
}

export function StatusPill({ status, testId }: { status: TApplication['status']; testId?: string }) {
  return (
    <span className={`pill ${status === 'active' ? 'pill--on' : 'pill--off'}`} data-testid={testId}>
      {status}
    </span>
  );
}

/** URLs one per line, or "none". */
function UrlList({ urls }: { urls: readonly string[] }) {
  if (urls.length === 0) {
    return <span className="muted">none</span>;
  }
  return (
    <>
      {urls.map((url) => (
        <div key={url}>
          <code>{url}</code>
        </div>
      ))}
    </>
  );
}

/** A value with a copy button. */
function Copyable({ value, testId }: { value: string; testId: string }) {
  return (
    <span style={{ display: 'inline-flex', gap: 8, alignItems: 'center', flexWrap: 'wrap' }}>
      <code data-testid={testId}>{value}</code>
      <CopyButton value={value} testId={`${testId}-copy`} />
    </span>
  );
}

function formValues(application: TApplication) {
  return {
    name: application.name,
    logoUrl: application.logoUrl ?? '',
    redirectUrls: application.redirectUrls.join('\n'),
    allowedOrigins: application.allowedOrigins.join('\n'),
    postLogoutRedirectUrls: application.postLogoutRedirectUrls.join('\n'),
    backchannelLogoutUrl: application.backchannelLogoutUrl ?? '',
    clientType: application.clientType,
    signInAudience: application.signInAudience,
    productionProvider: application.oauth.productionProvider ?? '',
  };
}

const textArea = { width: '100%', minHeight: 96, fontFamily: 'var(--font-mono, monospace)', padding: '0.4rem 0.5rem' };

function SettingsForm({
  application,
  organizationSlug,
  onSaved,
}: {
  application: TApplication;
  organizationSlug: string;
  onSaved: () => Promise<void>;
}) {
  const trpc = useTRPC();
  const form = useForm({
    resolver: zodResolver(ZApplicationSettingsForm),
    defaultValues: formValues(application),
  });
  const errors = form.formState.errors;
  const update = useMutation(trpc.applications.update.mutationOptions());
  const submit = form.handleSubmit(async (values) => {
    const saved = await update
      .mutateAsync({
        id: application.id,
        organization_slug: organizationSlug,
        name: values.name,
        logoUrl: values.logoUrl,
        redirectUrls: values.redirectUrls,
        allowedOrigins: values.allowedOrigins,
        postLogoutRedirectUrls: values.postLogoutRedirectUrls,
        backchannelLogoutUrl: values.backchannelLogoutUrl,
        clientType: values.clientType,
        signInAudience: values.signInAudience,
        oauth: { productionProvider: values.productionProvider },
      })
      .catch(() => undefined);
    if (saved) {
      // Show what was stored: normalized, duplicates removed.
      form.reset(formValues(saved));
      await onSaved();
    }
  });

  return (
    <form onSubmit={submit} noValidate data-testid="application-settings-form" style={{ display: 'grid', gap: 12 }}>
      <label className="form-field">
        <span>Name</span>
        <input data-testid="application-settings-name" {...form.register('name')} />
        {errors.name && (
          <span className="form-field__error" data-testid="application-settings-name-error">
            {errors.name.message}
          </span>
        )}
      </label>
      <label className="form-field">
        <span>Logo URL</span>
        <span className="muted">Shown on hosted sign-in to this application: an https URL, at most 2,048 characters. Empty: none.</span>
        <input placeholder="https://cdn.example.com/logo.png" data-testid="application-logo-url" {...form.register('logoUrl')} />
        {errors.logoUrl && (
          <span className="form-field__error" data-testid="application-logo-url-error">
            {errors.logoUrl.message}
          </span>
        )}
      </label>
      <label className="form-field">
        <span>Redirect URLs (one per line)</span>
        <span className="muted">
          Where hosted sign-in may send users back to (an exact match): https URLs, http only for localhost and 127.0.0.1, no fragments; or
          paths on svc like <code>/user</code>. At most 50.
        </span>
        <textarea style={textArea} data-testid="application-redirect-urls" {...form.register('redirectUrls')} />
        {errors.redirectUrls && (
          <span className="form-field__error" data-testid="application-redirect-urls-error">
            {errors.redirectUrls.message}
          </span>
        )}
      </label>
      <label className="form-field">
        <span>Allowed origins (one per line)</span>
        <span className="muted">
          The origins your frontend runs on, exactly <code>https://app.example.com</code> (scheme, host and port, no path). The setup
          context lists them as JavaScript origins to configure. At most 50.
        </span>
        <textarea style={textArea} data-testid="application-allowed-origins" {...form.register('allowedOrigins')} />
        {errors.allowedOrigins && (
          <span className="form-field__error" data-testid="application-allowed-origins-error">
            {errors.allowedOrigins.message}
          </span>
        )}
      </label>
      <label className="form-field">
        <span>Client type</span>
        <span className="muted">
          Confidential: a server-side app that authenticates with the secret key. Public: an SPA or native app that cannot keep a secret
          (PKCE only).
        </span>
        <select data-testid="application-client-type" {...form.register('clientType')}>
          <option value="confidential">confidential</option>
          <option value="public">public</option>
        </select>
      </label>
      <label className="form-field">
        <span>Who may sign in</span>
        <select data-testid="application-sign-in-audience" {...form.register('signInAudience')}>
          <option value="anyone">anyone</option>
          <option value="members">members of this organization only</option>
        </select>
      </label>
      <label className="form-field">
        <span>Post-logout redirect URLs (one per line)</span>
        <span className="muted">
          Where an OpenID Connect logout may send users back to (an exact match): https URLs, http only for localhost and 127.0.0.1, no
          fragments. At most 50.
        </span>
        <textarea style={textArea} data-testid="application-post-logout-urls" {...form.register('postLogoutRedirectUrls')} />
        {errors.postLogoutRedirectUrls && (
          <span className="form-field__error" data-testid="application-post-logout-urls-error">
            {errors.postLogoutRedirectUrls.message}
          </span>
        )}
      </label>
      <label className="form-field">
        <span>Back-channel logout URL</span>
        <span className="muted">
          svc POSTs a signed logout token here when a session that signed in to this application ends. Empty: none.
        </span>
        <input
          placeholder="https://app.example.com/backchannel-logout"
          data-testid="application-backchannel-url"
          {...form.register('backchannelLogoutUrl')}
        />
        {errors.backchannelLogoutUrl && (
          <span className="form-field__error" data-testid="application-backchannel-url-error">
            {errors.backchannelLogoutUrl.message}
          </span>
        )}
      </label>
      <label className="form-field">
        <span>Production OAuth provider</span>
        <span className="muted">
          The social provider used with your own OAuth credentials before launch (e.g. <code>google</code>). Empty: the shared development
          provider.
        </span>
        <input placeholder="google" data-testid="application-production-provider" {...form.register('productionProvider')} />
        {errors.productionProvider && (
          <span className="form-field__error" data-testid="application-production-provider-error">
            {errors.productionProvider.message}
          </span>
        )}
      </label>
      <div className="form-row">
        <button type="submit" className="button button--primary" disabled={update.isPending} data-testid="application-save">
          {update.isPending ? 'Saving…' : 'Save settings'}
        </button>
        {update.isSuccess && !form.formState.isDirty && (
          <span className="muted" data-testid="application-saved">
            Saved.
          </span>
        )}
      </div>
      {update.isError && <ErrorPanel error={update.error} title="Could not save the settings" />}
    </form>
  );
}

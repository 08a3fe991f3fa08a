import type { TApplication, TApplicationWithSecret } from '@svc/contracts/applications';
import { useQuery } from '@tanstack/react-query';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { When } from '../../components/when.tsx';
import { useTRPC } from '../../trpc.ts';
import { ApplicationActions } from './application-actions.tsx';
import { ConnectPanel } from './connect-panel.tsx';

type Props = {
  id: string;
  organizationSlug: string;
  onClose: () => void;
  /** Opens the settings dialog. */
  onEdit: (application: TApplication) => void;
  /** Called with the new secret key (shown once by the page). */
  onRotated: (rotated: TApplicationWithSecret) => Promise<void>;
};

/** One application: its keys, OpenID Connect facts and allowlists, each value an Identifier to copy; its menu and settings. */
export function ApplicationDetail({ id, organizationSlug, onClose, onEdit, onRotated }: Props) {
  const trpc = useTRPC();
  const application = useQuery(trpc.applications.get.queryOptions({ id, organization_slug: organizationSlug }));
  // The issuer is PUBLIC_URL: svc itself is every application's OpenID Provider.
  const config = useQuery(trpc.service.config.queryOptions());
  const issuer = config.data?.publicUrl.replace(/\/+$/, '');
  const app = application.data;
  const machine = app?.clientType === 'machine';

  return (
    <section className="panel" data-testid="application-detail" data-application-id={id}>
      <div className="panel__header">
        <h2 className="panel__title">{app ? app.name : 'Application'}</h2>
        <div className="panel__actions">
          {app && (
            <>
              <button type="button" className="button" onClick={() => onEdit(app)} data-testid="application-edit-open">
                Edit settings
              </button>
              <ApplicationActions
                application={app}
                organizationSlug={organizationSlug}
                onEdit={onEdit}
                onRotated={onRotated}
                testId="application-detail-actions"
              />
            </>
          )}
          <button type="button" className="button" onClick={onClose} data-testid="application-detail-close">
            Close
          </button>
        </div>
      </div>
      {application.isPending && <Skeleton label="Loading the application…" />}
      {application.isError && (
        <ErrorPanel error={application.error} title="Could not load the application" onRetry={() => void application.refetch()} />
      )}
      {app && (
        <div className="detail-stack">
          <dl className="facts" data-testid="application-keys">
            <dt>Status</dt>
            <dd>
              <StatusPill status={app.status} testId="application-detail-status" />
            </dd>
            <dt>Slug</dt>
            <dd>
              <Identifier value={app.slug} label="application slug" testId="application-slug" />
            </dd>
            <dt>Publishable key</dt>
            <dd>
              <Identifier value={app.publishableKey} label="publishable key" tail={8} testId="application-publishable-key" />
              <span className="muted"> public: put it in your frontend</span>
            </dd>
            <dt>Secret key</dt>
            <dd>
              <Identifier value={`${app.secretKeyPrefix}…`} label="secret key prefix" copy={false} testId="application-secret-prefix" />
              <span className="muted"> shown once when created or rotated; svc keeps only a hash</span>
            </dd>
            <dt>Logo</dt>
            <dd>
              {app.logoUrl ? (
                <Identifier value={app.logoUrl} label="logo URL" tail={16} testId="application-detail-logo-url" />
              ) : (
                <span className="muted">none</span>
              )}
            </dd>
            <dt>Created</dt>
            <dd>
              <When at={app.createdAt} empty="—" />
            </dd>
          </dl>
          <dl className="facts" data-testid="application-oidc">
            <dt>Issuer</dt>
            <dd>
              {issuer ? (
                <Identifier value={issuer} label="issuer URL" tail={16} testId="application-oidc-issuer" />
              ) : (
                <Skeleton label="Loading the issuer…" lines={1} />
              )}
            </dd>
            <dt>Client ID</dt>
            <dd>
              <Identifier value={app.id} label="client id" testId="application-oidc-client-id" />
            </dd>
            <dt>Discovery URL</dt>
            <dd>
              {issuer ? (
                <Identifier
                  value={`${issuer}/.well-known/openid-configuration`}
                  label="discovery URL"
                  tail={24}
                  testId="application-oidc-discovery"
                />
              ) : (
                <Skeleton label="Loading the discovery URL…" lines={1} />
              )}
            </dd>
            <dt>Client type</dt>
            <dd data-testid="application-oidc-client-type">
              {app.clientType === 'confidential' ? (
                <>
                  confidential <span className="muted">client secret: the secret key (client_secret_basic or client_secret_post)</span>
                </>
              ) : app.clientType === 'machine' ? (
                <>
                  machine <span className="muted">client credentials grant, for this organization</span>
                </>
              ) : (
                <>
                  public <span className="muted">no secret; PKCE (S256) required</span>
                </>
              )}
            </dd>
          </dl>
          {machine ? <MachineFacts application={app} issuer={issuer} /> : <SignInFacts application={app} />}
          {!machine && issuer && <ConnectPanel application={app} issuer={issuer} />}
          {!machine && (
            <div className="form-row">
              {app.status === 'active' ? (
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
                  Enable the application (its menu, “⋯”) to try signing in.
                </span>
              )}
            </div>
          )}
        </div>
      )}
    </section>
  );
}

/** What people signing in to a confidential or public application meet: audience, allowlists, logout, provider. */
function SignInFacts({ application: app }: { application: TApplication }) {
  return (
    <dl className="facts" data-testid="application-sign-in">
      <dt>Who may sign in</dt>
      <dd data-testid="application-sign-in-audience-fact">
        {app.signInAudience === 'members' ? 'members of this organization only' : 'anyone'}
      </dd>
      <dt>Redirect URLs</dt>
      <dd data-testid="application-oidc-redirect-urls">
        <UrlList urls={app.redirectUrls} label="redirect URL" />
      </dd>
      <dt>Allowed origins</dt>
      <dd data-testid="application-oidc-allowed-origins">
        <UrlList urls={app.allowedOrigins} label="allowed origin" />
      </dd>
      <dt>Post-logout redirect URLs</dt>
      <dd data-testid="application-oidc-post-logout-urls">
        <UrlList urls={app.postLogoutRedirectUrls} label="post-logout redirect URL" />
      </dd>
      <dt>Back-channel logout URL</dt>
      <dd data-testid="application-oidc-backchannel-url">
        <UrlList urls={app.backchannelLogoutUrl ? [app.backchannelLogoutUrl] : []} label="back-channel logout URL" />
      </dd>
      <dt>Production OAuth provider</dt>
      <dd data-testid="application-production-provider-fact">
        {app.oauth.productionProvider ? (
          <code>{app.oauth.productionProvider}</code>
        ) : (
          <span className="muted">shared development provider</span>
        )}
      </dd>
    </dl>
  );
}

/**
 * A machine client's facts: where it gets tokens, how it authenticates there (its keys by kid, or
 * their URL) and the product permissions it is granted.
 */
function MachineFacts({ application: app, issuer }: { application: TApplication; issuer: string | undefined }) {
  return (
    <dl className="facts" data-testid="application-machine">
      <dt>Token endpoint</dt>
      <dd>
        {issuer ? (
          <Identifier value={`${issuer}/oidc/token`} label="token endpoint" tail={16} testId="application-machine-token-endpoint" />
        ) : (
          <Skeleton label="Loading the token endpoint…" lines={1} />
        )}
      </dd>
      <dt>Authentication</dt>
      <dd data-testid="application-machine-auth-method">
        {app.tokenEndpointAuthMethod === 'private_key_jwt' ? (
          <>
            private_key_jwt <span className="muted">a JWT signed with one of its keys; the secret key serves svc's backend API only</span>
          </>
        ) : (
          <>
            client_secret_basic <span className="muted">the secret key as client secret</span>
          </>
        )}
      </dd>
      {app.tokenEndpointAuthMethod === 'private_key_jwt' && (
        <>
          <dt>Keys</dt>
          <dd data-testid="application-machine-keys">
            {app.jwksUri ? (
              <Identifier value={app.jwksUri} label="JWKS URI" tail={16} testId="application-machine-jwks-uri" />
            ) : (
              <ul className="url-list">
                {(app.jwks?.keys ?? []).map((key, index) => (
                  <li key={key.kid ?? index}>
                    <code>{key.kid ?? '(no kid)'}</code>{' '}
                    <span className="muted">
                      {key.kty}
                      {key.crv ? ` ${key.crv}` : ''}
                      {key.alg ? `, ${key.alg}` : ''}
                    </span>
                  </li>
                ))}
              </ul>
            )}
          </dd>
        </>
      )}
      <dt>Permissions</dt>
      <dd data-testid="application-machine-permissions">
        {app.permissions.length === 0 ? (
          <span className="muted">none</span>
        ) : (
          <ul className="url-list">
            {app.permissions.map((permission) => (
              <li key={permission}>
                <code>{permission}</code>
              </li>
            ))}
          </ul>
        )}
      </dd>
    </dl>
  );
}

export function StatusPill({ status, testId }: { status: TApplication['status']; testId?: string }) {
  return (
    <span className={`pill ${status === 'active' ? 'pill--on' : 'pill--off'}`} data-testid={testId}>
      {status}
    </span>
  );
}

/** URLs one per line, each an Identifier to copy, or "none". */
function UrlList({ urls, label }: { urls: readonly string[]; label: string }) {
  if (urls.length === 0) {
    return <span className="muted">none</span>;
  }
  return (
    <ul className="url-list">
      {urls.map((url) => (
        <li key={url}>
          <Identifier value={url} label={label} tail={16} testId="application-url" />
        </li>
      ))}
    </ul>
  );
}

import { useQuery } from '@tanstack/react-query';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { useTRPC } from '../../trpc.ts';

/** Service facts from the live `service.config` query. */
export function OverviewPage() {
  const trpc = useTRPC();
  const config = useQuery(trpc.service.config.queryOptions());

  return (
    <div data-testid="overview">
      <PageHeader title="Overview" description="How this svc deployment is configured." />
      {config.isPending && (
        <p className="loading" data-testid="overview-loading">
          Loading service configuration…
        </p>
      )}
      {config.isError && (
        <ErrorPanel error={config.error} title="Could not load the service configuration" onRetry={() => void config.refetch()} />
      )}
      {config.data && (
        <>
          <div className="card-grid">
            <section className="card">
              <h2 className="card__label">API version</h2>
              <p className="card__value" data-testid="service-api-version">
                {config.data.apiVersion}
              </p>
              <p className="card__hint">{config.data.service}</p>
            </section>
            <section className="card">
              <h2 className="card__label">Identity engine</h2>
              <p className="card__value" data-testid="service-engine-kind">
                {config.data.engine.kind}
              </p>
              <p className="card__hint" data-testid="service-engine-issuer">
                <code>{config.data.engine.issuer}</code>
              </p>
            </section>
            <section className="card">
              <h2 className="card__label">Keyless development</h2>
              <p className="card__value" data-testid="service-keyless">
                <span className={config.data.keyless.enabled ? 'pill pill--on' : 'pill pill--off'}>
                  {config.data.keyless.enabled ? 'Enabled' : 'Disabled'}
                </span>
              </p>
              <p className="card__hint">
                {config.data.keyless.enabled ? 'Apps can start without a publishable key.' : 'Every app needs a publishable key.'}
              </p>
            </section>
          </div>

          <section className="panel">
            <h2 className="panel__title">Endpoints</h2>
            <dl className="facts">
              <dt>Public URL</dt>
              <dd>
                <code data-testid="service-public-url">{config.data.publicUrl}</code>
              </dd>
              <dt>API reference</dt>
              <dd>
                <a href={config.data.docsUrl} data-testid="service-docs-link">
                  {config.data.docsUrl}
                </a>
              </dd>
              <dt>OpenAPI document</dt>
              <dd>
                <a href={config.data.openapiUrl} data-testid="service-openapi-link">
                  {config.data.openapiUrl}
                </a>
              </dd>
              <dt>Client configuration</dt>
              <dd>
                <code>{config.data.clientConfigUrl}</code>
              </dd>
            </dl>
          </section>
        </>
      )}
    </div>
  );
}

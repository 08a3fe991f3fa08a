import { router } from './init.ts';
import { apiKeysRouter } from './routers/api-keys.ts';
import { applicationsRouter } from './routers/applications.ts';
import { auditLogsRouter } from './routers/audit-logs.ts';
import { authorizationRouter } from './routers/authorization.ts';
import { backendRouter } from './routers/backend.ts';
import { billingRouter } from './routers/billing.ts';
import { clientConfigRouter } from './routers/client-config.ts';
import { connectedAppsRouter } from './routers/connected-apps.ts';
import { directoriesRouter } from './routers/directories.ts';
import { domainsRouter } from './routers/domains.ts';
import { emailDeliveriesRouter } from './routers/email-deliveries.ts';
import { exportsRouter } from './routers/exports.ts';
import { invitationsRouter } from './routers/invitations.ts';
import { jobQueueRouter } from './routers/job-queue.ts';
import { meRouter } from './routers/me.ts';
import { permissionCheckRouter } from './routers/permission-check.ts';
import { registeredClientsRouter } from './routers/registered-clients.ts';
import { rolesRouter } from './routers/roles.ts';
import { serviceRouter } from './routers/service.ts';
import { sessionsRouter } from './routers/sessions.ts';
import { setupRouter } from './routers/setup.ts';
import { setupLinksRouter } from './routers/setup-links.ts';
import { ssoConnectionsRouter } from './routers/sso.ts';
import { subscriptionsRouter } from './routers/subscriptions.ts';
import { tenantsRouter } from './routers/tenants.ts';
import { usageRouter } from './routers/usage.ts';
import { usersRouter } from './routers/users.ts';
import { eventsRouter, webhooksRouter } from './routers/webhooks.ts';

export const appRouter = router({
  service: serviceRouter,
  clientConfig: clientConfigRouter,
  backend: backendRouter,
  setup: setupRouter,
  me: meRouter,
  tenants: tenantsRouter,
  roles: rolesRouter,
  directories: directoriesRouter,
  domains: domainsRouter,
  ssoConnections: ssoConnectionsRouter,
  setupLinks: setupLinksRouter,
  connectedApps: connectedAppsRouter,
  authorization: authorizationRouter,
  invitations: invitationsRouter,
  auditLogs: auditLogsRouter,
  applications: applicationsRouter,
  apiKeys: apiKeysRouter,
  users: usersRouter,
  sessions: sessionsRouter,
  jobQueue: jobQueueRouter,
  registeredClients: registeredClientsRouter,
  emailDeliveries: emailDeliveriesRouter,
  webhooks: webhooksRouter,
  events: eventsRouter,
  billing: billingRouter,
  exports: exportsRouter,
  usage: usageRouter,
  subscriptions: subscriptionsRouter,
  permissions: permissionCheckRouter,
});

/** The router type the console and the typed clients import (never the implementation). */
export type AppRouter = typeof appRouter;

import { apiKeysRouter } from '../modules/api-keys/router.ts';
import { applicationsRouter } from '../modules/applications/router.ts';
import { auditLogsRouter } from '../modules/audit-logs/router.ts';
import { authorizationRouter } from '../modules/authorization/router.ts';
import { backendRouter } from '../modules/backend/router.ts';
import { billingRouter } from '../modules/billing/router.ts';
import { clientConfigRouter } from '../modules/client-config/router.ts';
import { connectedAppsRouter } from '../modules/connected-apps/router.ts';
import { domainsRouter } from '../modules/domains/router.ts';
import { emailDeliveriesRouter } from '../modules/email-deliveries/router.ts';
import { exportsRouter } from '../modules/exports/router.ts';
import { invitationsRouter } from '../modules/invitations/router.ts';
import { jobQueueRouter } from '../modules/job-queue/router.ts';
import { meRouter } from '../modules/me/router.ts';
import { permissionCheckRouter } from '../modules/permission-check/router.ts';
import { rolesRouter } from '../modules/roles/router.ts';
import { serviceRouter } from '../modules/service/router.ts';
import { sessionsRouter } from '../modules/sessions/router.ts';
import { setupRouter } from '../modules/setup/router.ts';
import { ssoConnectionsRouter } from '../modules/sso/router.ts';
import { subscriptionsRouter } from '../modules/subscriptions/router.ts';
import { tenantsRouter } from '../modules/tenants/router.ts';
import { usageRouter } from '../modules/usage/router.ts';
import { usersRouter } from '../modules/users/router.ts';
import { eventsRouter, webhooksRouter } from '../modules/webhooks/router.ts';
import { router } from './init.ts';

export const appRouter = router({
  service: serviceRouter,
  clientConfig: clientConfigRouter,
  backend: backendRouter,
  setup: setupRouter,
  me: meRouter,
  tenants: tenantsRouter,
  roles: rolesRouter,
  domains: domainsRouter,
  ssoConnections: ssoConnectionsRouter,
  connectedApps: connectedAppsRouter,
  authorization: authorizationRouter,
  invitations: invitationsRouter,
  auditLogs: auditLogsRouter,
  applications: applicationsRouter,
  apiKeys: apiKeysRouter,
  users: usersRouter,
  sessions: sessionsRouter,
  jobQueue: jobQueueRouter,
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

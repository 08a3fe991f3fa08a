import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { useState } from 'react';
import { createBrowserRouter } from 'react-router';
import { RouterProvider } from 'react-router/dom';
import { ConsoleLayout } from './layout/console-layout.tsx';
import { RootError, RouteError } from './layout/route-error.tsx';
import { isRetryable, parseError } from './lib/errors.ts';
import { redirectToSignIn } from './lib/session.ts';
import { ApiKeysPage } from './pages/api-keys/api-keys-page.tsx';
import { ApplicationsPage } from './pages/applications/applications-page.tsx';
import { AuditLogPage } from './pages/audit-log/audit-log-page.tsx';
import { BillingPage } from './pages/billing/billing-page.tsx';
import { EmailDeliveriesPage } from './pages/email-deliveries/email-deliveries-page.tsx';
import { ExportsPage } from './pages/exports/exports-page.tsx';
import { InvitationsPage } from './pages/invitations/invitations-page.tsx';
import { JobQueuePage } from './pages/job-queue/job-queue-page.tsx';
import { MembersPage } from './pages/members/members-page.tsx';
import { NotFoundPage } from './pages/not-found/not-found-page.tsx';
import { OverviewPage } from './pages/overview/overview-page.tsx';
import { PlansPage } from './pages/plans/plans-page.tsx';
import { RolesPage } from './pages/roles/roles-page.tsx';
import { SessionsPage } from './pages/sessions/sessions-page.tsx';
import { SettingsPage } from './pages/settings/settings-page.tsx';
import { SubscriptionPage } from './pages/subscription/subscription-page.tsx';
import { UsagePage } from './pages/usage/usage-page.tsx';
import { UsersPage } from './pages/users/users-page.tsx';
import { WebhookDeliveriesPage } from './pages/webhook-deliveries/webhook-deliveries-page.tsx';
import { WebhooksPage } from './pages/webhooks/webhooks-page.tsx';
import { makeTRPCClient, TRPCProvider } from './trpc.ts';

/** Must match vite.config.ts `base` (without the trailing slash) and where the api serves us. */
export const BASENAME = '/auth/console';

const router = createBrowserRouter(
  [
    {
      path: '/',
      element: <ConsoleLayout />,
      errorElement: <RootError />,
      children: [
        {
          // Pathless route: a page that throws renders RouteError inside the layout's <Outlet>.
          errorElement: <RouteError />,
          children: [
            { index: true, element: <OverviewPage /> },
            { path: 'applications', element: <ApplicationsPage /> },
            { path: 'members', element: <MembersPage /> },
            { path: 'users', element: <UsersPage /> },
            { path: 'sessions', element: <SessionsPage /> },
            { path: 'roles', element: <RolesPage /> },
            { path: 'invitations', element: <InvitationsPage /> },
            { path: 'email-deliveries', element: <EmailDeliveriesPage /> },
            { path: 'api-keys', element: <ApiKeysPage /> },
            { path: 'webhooks', element: <WebhooksPage /> },
            { path: 'webhook-deliveries', element: <WebhookDeliveriesPage /> },
            { path: 'usage', element: <UsagePage /> },
            { path: 'billing', element: <BillingPage /> },
            { path: 'subscription', element: <SubscriptionPage /> },
            { path: 'plans', element: <PlansPage /> },
            { path: 'audit-log', element: <AuditLogPage /> },
            { path: 'exports', element: <ExportsPage /> },
            { path: 'settings', element: <SettingsPage /> },
            { path: 'job-queue', element: <JobQueuePage /> },
            { path: '*', element: <NotFoundPage /> },
          ],
        },
      ],
    },
  ],
  { basename: BASENAME },
);

/** Any call answered `unauthenticated`: the session ended while the page was open. */
function onApiError(error: unknown) {
  if (parseError(error).code === 'unauthenticated') {
    redirectToSignIn();
  }
}

function makeQueryClient() {
  return new QueryClient({
    queryCache: new QueryCache({ onError: onApiError }),
    mutationCache: new MutationCache({ onError: onApiError }),
    defaultOptions: {
      queries: {
        staleTime: 30_000,
        retry: (failureCount, error) => failureCount < 2 && isRetryable(error),
        refetchOnWindowFocus: false,
      },
      mutations: { retry: false },
    },
  });
}

export function App() {
  const [queryClient] = useState(makeQueryClient);
  const [trpcClient] = useState(makeTRPCClient);
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        <RouterProvider router={router} />
      </TRPCProvider>
    </QueryClientProvider>
  );
}

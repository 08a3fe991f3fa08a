import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { type ComponentType, lazy, useState } from 'react';
import { createBrowserRouter, Navigate, useLocation } from 'react-router';
import { RouterProvider } from 'react-router/dom';
import { Toaster } from 'sonner';
import { ConsoleLayout } from './layout/console-layout.tsx';
import { RootError, RouteError } from './layout/route-error.tsx';
import { isRetryable, parseError } from './lib/errors.ts';
import { redirectToSignIn } from './lib/session.ts';
import { makeTRPCClient, TRPCProvider } from './trpc.ts';

/** Must match vite.config.ts `base` (without the trailing slash) and where the api serves us. */
export const BASENAME = '/auth/console';

/**
 * A route's page as its own chunk, loaded when the route is first shown (the layout's Suspense
 * shows a skeleton meanwhile). Nothing else is fetched ahead: the first load carries only the
 * current page (the Usage page's charts alone are larger than the rest of the console), and a
 * compressed page chunk is a few kilobytes (docs/architecture.md section 3).
 */
function page(load: () => Promise<ComponentType>) {
  const Page = lazy(async () => ({ default: await load() }));
  return <Page />;
}

/** An old address that moved: the same query and fragment at `to`, replacing the history entry. */
function Moved({ to }: { to: string }) {
  const { search, hash } = useLocation();
  return <Navigate to={{ pathname: to, search, hash }} replace />;
}

/** The People page (members and invitations as tabs), one chunk for both tabs. */
function people(tab: 'members' | 'invitations') {
  return page(async () => {
    const { PeoplePage } = await import('./pages/people/people-page.tsx');
    return () => <PeoplePage tab={tab} />;
  });
}

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
            { index: true, element: page(async () => (await import('./pages/overview/overview-page.tsx')).OverviewPage) },
            {
              // One route for the list and an application's page (/applications/<id>): the secret
              // key a create reveals stays open while the page moves to the new application.
              path: 'applications/:id?',
              element: page(async () => (await import('./pages/applications/applications-page.tsx')).ApplicationsPage),
            },
            // People: members and invitations, a tab each; the pages they replaced redirect to their tab.
            { path: 'people', element: <Moved to="/people/members" /> },
            { path: 'people/members', element: people('members') },
            // The tab and an invitation's page (/people/invitations/<id>), one route as for applications.
            { path: 'people/invitations/:id?', element: people('invitations') },
            { path: 'members', element: <Moved to="/people/members" /> },
            { path: 'invitations', element: <Moved to="/people/invitations" /> },
            // The list and a user's page (/users/<id>), one route as for applications.
            { path: 'users/:id?', element: page(async () => (await import('./pages/users/users-page.tsx')).UsersPage) },
            // The list and a session's page (/sessions/<id>), one route as for applications.
            { path: 'sessions/:id?', element: page(async () => (await import('./pages/sessions/sessions-page.tsx')).SessionsPage) },
            // The list and a role's page (/roles/<key>), one route as for applications.
            { path: 'roles/:key?', element: page(async () => (await import('./pages/roles/roles-page.tsx')).RolesPage) },
            {
              path: 'email-deliveries',
              element: page(async () => (await import('./pages/email-deliveries/email-deliveries-page.tsx')).EmailDeliveriesPage),
            },
            // The list and a key's page (/api-keys/<id>), one route as for applications.
            { path: 'api-keys/:id?', element: page(async () => (await import('./pages/api-keys/api-keys-page.tsx')).ApiKeysPage) },
            // The list and an endpoint's page (/webhooks/<id>), one route as for applications.
            { path: 'webhooks/:id?', element: page(async () => (await import('./pages/webhooks/webhooks-page.tsx')).WebhooksPage) },
            {
              path: 'webhook-deliveries',
              element: page(async () => (await import('./pages/webhook-deliveries/webhook-deliveries-page.tsx')).WebhookDeliveriesPage),
            },
            { path: 'usage', element: page(async () => (await import('./pages/usage/usage-page.tsx')).UsagePage) },
            { path: 'billing', element: page(async () => (await import('./pages/billing/billing-page.tsx')).BillingPage) },
            {
              path: 'subscription',
              element: page(async () => (await import('./pages/subscription/subscription-page.tsx')).SubscriptionPage),
            },
            { path: 'plans', element: page(async () => (await import('./pages/plans/plans-page.tsx')).PlansPage) },
            { path: 'audit-log', element: page(async () => (await import('./pages/audit-log/audit-log-page.tsx')).AuditLogPage) },
            { path: 'exports', element: page(async () => (await import('./pages/exports/exports-page.tsx')).ExportsPage) },
            { path: 'settings', element: page(async () => (await import('./pages/settings/settings-page.tsx')).SettingsPage) },
            { path: 'settings/domains', element: page(async () => (await import('./pages/domains/domains-page.tsx')).DomainsPage) },
            {
              path: 'settings/directory-sync',
              element: page(async () => (await import('./pages/directories/directories-page.tsx')).DirectoriesPage),
            },
            {
              path: 'settings/sso-connections',
              element: page(async () => (await import('./pages/sso/sso-connections-page.tsx')).SsoConnectionsPage),
            },
            {
              path: 'settings/setup-links',
              element: page(async () => (await import('./pages/setup-links/setup-links-page.tsx')).SetupLinksPage),
            },
            {
              path: 'settings/third-party-access',
              element: page(async () => (await import('./pages/connected-apps/third-party-access-page.tsx')).ThirdPartyAccessPage),
            },
            {
              // The list and an organization's page (/organizations/<id>), one route as for applications.
              path: 'organizations/:id?',
              element: page(async () => (await import('./pages/organizations/organizations-page.tsx')).OrganizationsPage),
            },
            { path: 'job-queue', element: page(async () => (await import('./pages/job-queue/job-queue-page.tsx')).JobQueuePage) },
            {
              path: 'registered-clients',
              element: page(async () => (await import('./pages/registered-clients/registered-clients-page.tsx')).RegisteredClientsPage),
            },
            { path: 'authorization', element: <Navigate to="/authorization/resources" replace /> },
            {
              path: 'authorization/resources',
              element: page(async () => (await import('./pages/authorization/api-resources-page.tsx')).ApiResourcesPage),
            },
            {
              path: 'authorization/resources/:id',
              element: page(async () => (await import('./pages/authorization/api-resource-page.tsx')).ApiResourcePage),
            },
            {
              // The list and a product role's page, by its key (/authorization/product-roles/<key>).
              path: 'authorization/product-roles/:key?',
              element: page(async () => (await import('./pages/authorization/product-roles-page.tsx')).ProductRolesPage),
            },
            { path: '*', element: page(async () => (await import('./pages/not-found/not-found-page.tsx')).NotFoundPage) },
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
        {/* The one toast region: `toast.success('Copied')` from anywhere. */}
        <Toaster theme="system" position="bottom-right" closeButton />
      </TRPCProvider>
    </QueryClientProvider>
  );
}

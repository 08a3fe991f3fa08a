/**
 * The application's page in svc's console (the Applications list with it open), as a path on
 * svc: what the claim result and the unregistered-redirect page link to. Built from the
 * application id alone, so nothing a request carries can make it point elsewhere.
 */
export function consoleApplicationPath(applicationId: string): string {
  return `/auth/console/applications?application=${encodeURIComponent(applicationId)}`;
}

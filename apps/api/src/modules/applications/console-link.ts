/**
 * The application's page in svc's console (/applications/<id>), as a path on
 * svc: what the claim result and the unregistered-redirect page link to. Built from the
 * application id alone, so nothing a request carries can make it point elsewhere.
 */
export function consoleApplicationPath(applicationId: string): string {
  return `/auth/console/applications/${encodeURIComponent(applicationId)}`;
}

/**
 * Where an organization can change its plan: SUBSCRIPTION_UPGRADE_URL with `{organizationId}`
 * filled in, or null when it is not configured.
 */
export function upgradeUrlFor(template: string | null, organizationId: string): string | null {
  return template === null ? null : template.replaceAll('{organizationId}', encodeURIComponent(organizationId));
}

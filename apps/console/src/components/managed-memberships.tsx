/**
 * Said instead of Add user and Invite in the platform workspace, whose members svc never adds,
 * invites, changes or removes itself (the API answers 409 platform_workspace_managed): they are
 * the identity engine's platform admin group, synchronised at each sign-in.
 */
export function ManagedMemberships({ testId }: { testId: string }) {
  return (
    <p className="callout" role="note" data-testid={testId}>
      The platform workspace’s members are the identity engine’s platform admin group: add or remove a platform admin in the engine, and
      they join or leave here at their next sign-in. People of an organization are added in that organization (Organizations, then Open).
    </p>
  );
}

/** The platform workspace: its memberships are the engine's, not the console's to change. */
export const isPlatformWorkspace = (organization: { kind: string } | null | undefined) => organization?.kind === 'platform';

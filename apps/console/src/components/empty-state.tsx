type EmptyStateProps = {
  /** The capability whose arrival fills this page, e.g. "tenant member management". */
  capability: string;
  /** One sentence on what the page will be for. */
  description: string;
};

/** A deliberate placeholder for a page whose API has not shipped yet (not a broken page). */
export function EmptyState({ capability, description }: EmptyStateProps) {
  return (
    <div className="empty-state" data-testid="empty-state">
      <div className="empty-state__badge">Coming soon</div>
      <p className="empty-state__title">This page arrives with {capability}.</p>
      <p className="empty-state__description">{description}</p>
    </div>
  );
}

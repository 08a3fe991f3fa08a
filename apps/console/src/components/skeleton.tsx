import { useId } from 'react';

type SkeletonProps = {
  /** What is loading, said to screen readers: "Loading members…". */
  label: string;
  /** Kept on the skeleton so tests find the loading state: `<testId>` (ListPage passes `<list>-loading`). */
  testId?: string;
  /** How many grey lines stand in for the content. */
  lines?: number;
  /** A wider first bar standing in for a page heading (the route fallback). */
  heading?: boolean;
};

/** Bar widths, so the placeholder looks like ragged rows of text rather than a block. */
const WIDTHS = ['100%', '92%', '96%', '84%', '98%', '88%'];

/**
 * The one loading state: grey bars where the content will be, and a status that names what
 * loads. It replaces every "Loading …" sentence; the bars are hidden from screen readers.
 */
export function Skeleton({ label, testId, lines = 4, heading = false }: SkeletonProps) {
  const labelId = useId();
  return (
    <div className="skeleton" role="status" aria-labelledby={labelId} data-testid={testId}>
      <span id={labelId} className="sr-only">
        {label}
      </span>
      {heading && <div className="skeleton__bar skeleton__bar--heading" aria-hidden="true" />}
      {Array.from({ length: lines }, (_, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: placeholders without identity, never reordered
        <div key={i} className="skeleton__bar" style={{ width: WIDTHS[i % WIDTHS.length] }} aria-hidden="true" />
      ))}
    </div>
  );
}

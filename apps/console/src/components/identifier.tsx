import { CopyButton } from './copy-button.tsx';
import { Tooltip } from './tooltip.tsx';

type IdentifierProps = {
  /** The whole id, key prefix or URL; it is what the tooltip shows and the copy button copies. */
  value: string;
  /** What it is, for the copy button's name ("Copy API key id") : "API key id", "Issuer URL". */
  label: string;
  /** Characters at the end that stay visible when the value is cut (the part that tells ids apart). */
  tail?: number;
  /** Offer the copy button (default). Off where copying makes no sense, e.g. a partial value. */
  copy?: boolean;
  /** On the element holding the text. */
  testId?: string;
};

/**
 * An id, key or URL in monospace, on one line, never broken mid-token. When it is wider than its
 * place, the middle gives way: the start ends in an ellipsis and the last `tail` characters stay.
 * The full value is in the DOM (screen readers and find-in-page get it whole), in a tooltip on
 * hover, and one click away on the clipboard. `data-identifier` marks the text element: it must
 * never wrap.
 */
export function Identifier({ value, label, tail = 6, copy = true, testId }: IdentifierProps) {
  const cut = value.length > tail + 2 ? value.length - tail : value.length;
  return (
    <span className="identifier">
      <Tooltip content={value} mono>
        <span className="identifier__text" data-identifier="" data-testid={testId}>
          <span className="identifier__start">{value.slice(0, cut)}</span>
          <span className="identifier__end">{value.slice(cut)}</span>
        </span>
      </Tooltip>
      {copy && <CopyButton value={value} label={`Copy ${label}`} compact testId={testId ? `${testId}-copy` : undefined} />}
    </span>
  );
}

import type { ReactNode } from 'react';

type CodeBlockProps = {
  /** Names the block for screen readers: "Request body", "Response of attempt 2". */
  label: string;
  children: ReactNode;
  testId?: string;
};

/**
 * Machine text shown as it is (a JSON body, a receiver's answer): monospace, kept to its box and
 * scrolled there. The box is a named, focusable region, so a keyboard can scroll it too.
 */
export function CodeBlock({ label, children, testId }: CodeBlockProps) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region takes focus so a keyboard can scroll it (axe scrollable-region-focusable)
    <section className="code-block" tabIndex={0} aria-label={label} data-testid={testId}>
      <pre>{children}</pre>
    </section>
  );
}

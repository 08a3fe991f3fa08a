import { useState } from 'react';

/**
 * Cursor paging for `{ data, nextCursor }` lists: the cursors of the pages visited so far, so
 * Previous works without offsets. Reset it when filters change.
 */
export function usePager() {
  const [stack, setStack] = useState<(string | undefined)[]>([undefined]);
  const cursor = stack[stack.length - 1];
  return {
    cursor,
    page: stack.length,
    next: (nextCursor: string) => setStack((s) => [...s, nextCursor]),
    previous: () => setStack((s) => (s.length > 1 ? s.slice(0, -1) : s)),
    reset: () => setStack([undefined]),
  };
}

export type PagerState = ReturnType<typeof usePager>;

type PagerProps = {
  pager: PagerState;
  /** The shown page's cursor to the next one; null on the last page. */
  nextCursor: string | null | undefined;
  /** While the next page loads (the current one is still on screen), Next waits for it. */
  busy?: boolean;
  testId?: string;
};

/**
 * Previous / Page N / Next. A list that fits on one page (no page before it, no cursor after it)
 * has nothing to page through: the pager is not shown at all.
 */
export function Pager({ pager, nextCursor, busy = false, testId = 'pager' }: PagerProps) {
  if (pager.page === 1 && !nextCursor) {
    return null;
  }
  return (
    <nav className="pager" aria-label="Pages" data-testid={testId}>
      <button type="button" className="button" disabled={pager.page === 1} onClick={pager.previous} data-testid={`${testId}-previous`}>
        Previous
      </button>
      <span className="muted" data-testid={`${testId}-page`}>
        Page {pager.page}
      </span>
      <button
        type="button"
        className="button"
        disabled={busy || !nextCursor}
        onClick={() => nextCursor && pager.next(nextCursor)}
        data-testid={`${testId}-next`}
      >
        Next
      </button>
    </nav>
  );
}

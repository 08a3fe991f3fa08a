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

type PagerProps = { pager: ReturnType<typeof usePager>; nextCursor: string | null | undefined; testId?: string };

export function Pager({ pager, nextCursor, testId = 'pager' }: PagerProps) {
  return (
    <nav className="pager" aria-label="Pages" data-testid={testId}>
      <button type="button" className="button" disabled={pager.page === 1} onClick={pager.previous} data-testid={`${testId}-previous`}>
        Previous
      </button>
      <span className="muted">Page {pager.page}</span>
      <button
        type="button"
        className="button"
        disabled={!nextCursor}
        onClick={() => nextCursor && pager.next(nextCursor)}
        data-testid={`${testId}-next`}
      >
        Next
      </button>
    </nav>
  );
}

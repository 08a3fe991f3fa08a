import { useLayoutEffect, useRef, useState } from 'react';
import { chipsThatFit } from '../lib/chips-fit.ts';
import { Tooltip } from './tooltip.tsx';

/** Space between chips, as `.chips` sets it (CSS gap). */
const GAP_PX = 4;

type ChipsProps = {
  /** The names, in the order they are shown. */
  names: readonly string[];
  testId: string;
  /** Shown instead when there are no names. */
  empty?: string;
};

/**
 * Names as one line of chips (scopes, permissions, event types). As many as the cell has room for
 * are shown whole, the rest are counted in a "+N more" chip whose tooltip (and, for screen readers,
 * whose text) names them: nothing is cut while there is room. Refitted whenever the cell changes
 * width.
 */
export function Chips(props: ChipsProps) {
  // A new list is measured afresh: every chip rendered once, then as many as fit.
  return <FittedChips key={props.names.join('\n')} {...props} />;
}

function FittedChips({ names, testId, empty = 'none' }: ChipsProps) {
  const box = useRef<HTMLSpanElement>(null);
  // Null until the first layout has measured every chip (all of them on screen, and the "+N more" chip).
  const [shown, setShown] = useState<number | null>(null);
  const measured = useRef<{ widths: number[]; more: number } | null>(null);

  useLayoutEffect(() => {
    const el = box.current;
    if (!el || names.length === 0) {
      return;
    }
    // First layout: every chip and the "+N more" chip are on screen; their widths are kept.
    measured.current ??= {
      widths: [...el.querySelectorAll<HTMLElement>('[data-chip]')].map((chip) => chip.getBoundingClientRect().width),
      more: el.querySelector<HTMLElement>('[data-chip-more]')?.getBoundingClientRect().width ?? 0,
    };
    const fit = () => {
      const { widths, more } = measured.current ?? { widths: [], more: 0 };
      setShown(chipsThatFit(widths, el.clientWidth, GAP_PX, more));
    };
    fit();
    const observer = new ResizeObserver(fit);
    observer.observe(el);
    return () => observer.disconnect();
  }, [names]);

  if (names.length === 0) {
    return (
      <span className="muted" data-testid={testId}>
        {empty}
      </span>
    );
  }
  const measuring = shown === null;
  const hidden = names.slice(shown ?? names.length);
  return (
    <span className={measuring ? 'chips chips--measuring' : 'chips'} ref={box} data-testid={testId} data-shown={shown ?? undefined}>
      {names.map((name, index) => (
        <code key={name} data-chip="" className="chips__chip" hidden={shown !== null && index >= shown}>
          {name}
        </code>
      ))}
      {(measuring || hidden.length > 0) && (
        <Tooltip content={hidden.join(', ')} mono>
          <span className="chips__more" data-chip-more="" data-testid={`${testId}-more`}>
            +{measuring ? names.length : hidden.length} more
            <span className="sr-only">: {hidden.join(', ')}</span>
          </span>
        </Tooltip>
      )}
    </span>
  );
}

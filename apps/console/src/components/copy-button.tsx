import { useEffect, useState } from 'react';
import { toast } from 'sonner';

type CopyButtonProps = {
  /** The exact text put on the clipboard. */
  value: string;
  testId?: string;
  /** What is copied, for the button's accessible name: "Copy API key id". Defaults to "Copy". */
  label?: string;
  /** A small square button with an icon (in an Identifier); the default is a labelled button. */
  compact?: boolean;
};

/** The clipboard API where the page may use it, else the selection command older contexts allow. */
async function writeClipboard(value: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(value);
    return true;
  } catch {
    const area = document.createElement('textarea');
    area.value = value;
    area.setAttribute('readonly', '');
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.append(area);
    area.select();
    try {
      return document.execCommand('copy');
    } finally {
      area.remove();
    }
  }
}

/**
 * Copies `value` and says so twice: a "Copied" toast (announced by screen readers) and the button's
 * own text for two seconds. A copy that fails says that instead.
 */
export function CopyButton({ value, testId, label, compact = false }: CopyButtonProps) {
  const [copied, setCopied] = useState(false);
  useEffect(() => {
    if (!copied) {
      return;
    }
    const timer = setTimeout(() => setCopied(false), 2000);
    return () => clearTimeout(timer);
  }, [copied]);
  const name = label ?? 'Copy';
  return (
    <>
      <button
        type="button"
        className={compact ? 'button button--icon' : 'button'}
        data-testid={testId}
        aria-label={compact ? name : undefined}
        title={compact ? name : undefined}
        onClick={async () => {
          if (await writeClipboard(value)) {
            setCopied(true);
            toast.success('Copied');
          } else {
            toast.error('Could not copy: select the text and copy it yourself.');
          }
        }}
      >
        {compact ? copied ? <CheckIcon /> : <CopyIcon /> : copied ? 'Copied' : 'Copy'}
      </button>
      {/* Said here too: inside a modal dialog, screen readers cannot reach the toast region. */}
      <span className="sr-only" role="status">
        {copied ? 'Copied' : ''}
      </span>
    </>
  );
}

/** Two overlapping sheets, drawn in the text colour (fonts lack a copy glyph). */
function CopyIcon() {
  return (
    <svg width="14" height="14" viewBox="0 0 16 16" fill="none" stroke="currentColor" strokeWidth="1.5" aria-hidden="true">
      <rect x="5.5" y="5.5" width="8" height="8" rx="1.5" />
      <path d="M10.5 3.5v-1a1 1 0 0 0-1-1h-7a1 1 0 0 0-1 1v7a1 1 0 0 0 1 1h1" />
    </svg>
  );
}

function CheckIcon() {
  return (
    <svg width="14" height="14" viewBox="0 0 16 16" fill="none" stroke="currentColor" strokeWidth="2" aria-hidden="true">
      <path d="M3 8.5l3 3 7-7" />
    </svg>
  );
}

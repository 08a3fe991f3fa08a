import { Router } from 'express';

/** Where hosted pages load their copy buttons' script from (same origin: the CSP allows it). */
export const COPY_SCRIPT_PATH = '/hosted/copy.js';

/** The `<script>` a hosted page with a copy button carries (hosted pages allow no inline script). */
export const COPY_SCRIPT_TAG = `<script src="${COPY_SCRIPT_PATH}" defer></script>`;

/**
 * A button `<button type="button" data-copy="<id>">` copies the text of the element with that id.
 * The Clipboard API needs a secure context (https, or svc on localhost / 127.0.0.1); elsewhere the
 * text is selected and copied the old way, and stays selected for Ctrl-C.
 */
const SCRIPT = `document.addEventListener('click', async (event) => {
  const button = event.target instanceof Element ? event.target.closest('button[data-copy]') : null;
  const source = button ? document.getElementById(button.dataset.copy) : null;
  if (!button || !source) return;
  const text = source.textContent || '';
  let copied = false;
  try {
    await navigator.clipboard.writeText(text);
    copied = true;
  } catch {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    copied = document.execCommand('copy');
  }
  button.textContent = copied ? 'Copied' : 'Selected: press Ctrl-C';
});
`;

export function copyButtonRouter(): Router {
  const r = Router();
  r.get(COPY_SCRIPT_PATH, (_req, res) => {
    res.type('text/javascript').set('Cache-Control', 'public, max-age=3600').send(SCRIPT);
  });
  return r;
}

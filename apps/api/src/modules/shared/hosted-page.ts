import { HOSTED_STYLE } from './hosted-style.ts';

/** Where every page svc serves points its icon (served by http/favicon.ts). */
export const FAVICON_PATH = '/favicon.svg';

/** The `<link>` every HTML page svc serves carries in its head. */
export const FAVICON_LINK = `<link rel="icon" href="${FAVICON_PATH}" type="image/svg+xml">`;

/** Escapes text for HTML element and attribute content. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * A hosted page: one card in the console's look (hosted.css), no scripts (the CSP allows none
 * inline); `wide` for tables of data. `body` holds the page's one <h1>. The HTML shell of every
 * hosted page: the Express pages of http/hosted/ and the pages oidc-provider renders through its
 * configuration (modules/oidc-provider/error-page.ts, logout.ts) alike.
 */
export function hostedPage(title: string, body: string, opts: { wide?: boolean } = {}): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark"><title>${escapeHtml(title)}</title>${FAVICON_LINK}<style>${HOSTED_STYLE}</style></head><body><main${opts.wide ? ' class="wide"' : ''}>${body}</main></body></html>`;
}

export function messagePage(title: string, detail: string, linkHref: string): string {
  return hostedPage(
    title,
    `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(detail)}</p><a class="button" href="${escapeHtml(linkHref)}">Continue</a>`,
  );
}

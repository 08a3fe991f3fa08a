import { readFileSync } from 'node:fs';
import { expect } from 'vitest';

/** The console's accent in its light scheme, read from the one token list the hosted pages inline. */
const CONSOLE_ACCENT = /--accent: (#[0-9a-f]{6});/.exec(
  readFileSync(new URL('../../apps/console/src/tokens.css', import.meta.url), 'utf8'),
)?.[1];

/** The sources of one directive of a response's Content-Security-Policy (empty when it has none). */
export function cspSources(res: Response, name: string): string[] {
  const csp = res.headers.get('content-security-policy') ?? '';
  const directive = csp.split(';').find((d) => d.trim().split(/\s+/)[0] === name);
  return directive ? directive.trim().split(/\s+/).slice(1) : [];
}

/**
 * What every hosted page has: a language, the favicon, one <main> card and one <h1>, the
 * console's tokens with a dark variant and a focus ring, and a label for every visible input.
 * Returns the text of the <h1>'s markup.
 */
export function expectHostedPage(html: string, where: string): string {
  expect(html, where).toMatch(/^<!doctype html><html lang="en">/);
  expect(html, where).toContain('<link rel="icon" href="/favicon.svg" type="image/svg+xml">');
  expect(html.match(/<main[\s>]/g), where).toHaveLength(1);
  const headings = [...html.matchAll(/<h1[^>]*>([\s\S]*?)<\/h1>/g)];
  expect(headings, where).toHaveLength(1);
  // The console's own tokens (apps/console/src/tokens.css, the one list), a dark scheme, a visible focus ring.
  expect(html, where).toContain(`--accent: ${CONSOLE_ACCENT};`);
  expect(html, where).toContain('--surface: #ffffff;');
  expect(html, where).toContain('@media (prefers-color-scheme: dark)');
  expect(html, where).toMatch(/:focus-visible \{ outline: 2px solid var\(--accent\);/);
  for (const input of html.matchAll(/<input\b[^>]*>/g)) {
    if (/type="hidden"/.test(input[0])) {
      continue;
    }
    const id = /\bid="([^"]+)"/.exec(input[0])?.[1];
    expect(id, `${where}: ${input[0]} has an id`).toBeDefined();
    expect(html, `${where}: a label for ${input[0]}`).toContain(`<label for="${id}">`);
  }
  return headings[0]?.[1] ?? '';
}

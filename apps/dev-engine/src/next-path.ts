/**
 * Accepts only a same-origin relative path for a flow's `next`. Refuses absolute URLs,
 * protocol-relative `//evil`, the backslash variant `/\evil` (browsers treat `\` as `/`), and
 * control characters that browsers strip before parsing (`/\t/evil`).
 */
export function safeNextPath(next: unknown): string | undefined {
  if (typeof next !== 'string' || !next.startsWith('/')) {
    return undefined;
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to reject control characters.
  if (/[\u0000-\u001f\u007f\\]/.test(next) || next.startsWith('//')) {
    return undefined;
  }
  const base = 'http://dev-engine.invalid';
  const url = new URL(next, base);
  if (url.origin !== base) {
    return undefined;
  }
  return `${url.pathname}${url.search}${url.hash}`;
}

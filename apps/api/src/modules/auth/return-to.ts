/**
 * Where a hand-off may send the browser back to (ARCHITECTURE.md section 6): a path on svc's own
 * origin, or a URL exactly in the application's redirect allowlist. Everything is parsed once,
 * with WHATWG URL against svc's origin, and the parsed result is what is compared and returned,
 * so what is checked is what the browser will follow. Anything else falls back to `fallback`.
 *
 * Open-redirect tricks this stops: `//evil` and `/\evil` (scheme-relative; browsers treat `\` as
 * `/`), `https:evil` (scheme without slashes), `https://user@evil` and `https://svc.example@evil`
 * (userinfo), percent-encoded and control-character variants (`/%2F%2Fevil`, `/\tevil`,
 * `java\nscript:`), and full URLs that are not exactly allowlisted.
 */
export function sanitizeReturnTo(value: unknown, opts: { publicUrl: string; allowlist?: readonly string[]; fallback: string }): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 2048) {
    return opts.fallback;
  }
  // Control characters and backslashes never belong in a return address; browsers strip or
  // rewrite them, which is how `/\evil` and `/\tevil` turn into another origin.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to reject them.
  if (/[\u0000-\u001f\u007f\\]/.test(value)) {
    return opts.fallback;
  }
  let decoded = value;
  try {
    decoded = decodeURIComponent(value);
  } catch {
    return opts.fallback;
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: encoded control characters too.
  if (/[\u0000-\u001f\u007f\\]/.test(decoded) || decoded.startsWith('//')) {
    return opts.fallback;
  }
  // Only two shapes are accepted: a path, or an absolute http(s) URL with an authority.
  // `https:evil` and friends resolve in surprising ways; refusing them is simpler than reasoning.
  if (!value.startsWith('/') && !/^https?:\/\//i.test(value)) {
    return opts.fallback;
  }
  const base = new URL(opts.publicUrl);
  let parsed: URL;
  try {
    parsed = new URL(value, base);
  } catch {
    return opts.fallback;
  }
  if (parsed.username || parsed.password) {
    return opts.fallback;
  }
  if (value.startsWith('/') && !value.startsWith('//')) {
    // A path: it must stay on svc's origin once resolved.
    return parsed.origin === base.origin ? `${parsed.pathname}${parsed.search}${parsed.hash}` : opts.fallback;
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    return opts.fallback;
  }
  const href = parsed.toString();
  const allowed = (opts.allowlist ?? []).some((entry) => {
    try {
      return new URL(entry).toString() === href;
    } catch {
      return false;
    }
  });
  if (allowed) {
    return href;
  }
  return parsed.origin === base.origin ? `${parsed.pathname}${parsed.search}${parsed.hash}` : opts.fallback;
}

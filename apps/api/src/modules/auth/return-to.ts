/**
 * Where a hand-off may send the browser back to (docs/architecture.md section 6): a path on svc's own
 * origin, or a URL exactly in the application's redirect allowlist. Everything is parsed once,
 * with WHATWG URL against svc's origin, and the serialized result is what is checked and returned.
 * Anything else falls back to `fallback`.
 *
 * Open-redirect tricks this stops: `//evil` and `/\evil` (scheme-relative; browsers treat `\` as
 * `/`), `https:evil` (scheme without slashes), `https://user@evil` and `https://svc.example@evil`
 * (userinfo), percent-encoded and control-character variants (`/%2F%2Fevil`, `/\tevil`,
 * `java\nscript:`), full URLs that are not exactly allowlisted, and paths that only become
 * scheme-relative once parsed: `/.//evil`, `/..//evil`, `/./%2e%2e//evil` and
 * `https://svc.example//evil` all have the pathname `//evil`, which as a Location header is
 * another host. The last step (isSafeLocation) therefore judges the string the browser will get.
 */
export function sanitizeReturnTo(value: unknown, opts: { publicUrl: string; allowlist?: readonly string[]; fallback: string }): string {
  const candidate = candidateOf(value, opts);
  return candidate !== undefined && isSafeLocation(candidate, opts) ? candidate : opts.fallback;
}

/** Where a sign-in lands when it was given no (acceptable) return address. */
export const DEFAULT_RETURN_TO = '/auth/console';

/** Longest return address kept; longer ones fall back. */
export const MAX_RETURN_TO = 2048;

// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to reject them.
const CONTROL_OR_BACKSLASH = /[\u0000-\u001f\u007f\\]/;

/** The return address as svc would serialize it, or undefined when it is plainly not one. */
function candidateOf(value: unknown, opts: { publicUrl: string; allowlist?: readonly string[] }): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_RETURN_TO) {
    return undefined;
  }
  // Control characters and backslashes never belong in a return address; browsers strip or
  // rewrite them, which is how `/\evil` and `/\tevil` turn into another origin.
  if (CONTROL_OR_BACKSLASH.test(value)) {
    return undefined;
  }
  // Only two shapes are accepted: a path, or an absolute http(s) URL with an authority.
  // `https:evil` and friends resolve in surprising ways; refusing them is simpler than reasoning.
  if (!value.startsWith('/') && !/^https?:\/\//i.test(value)) {
    return undefined;
  }
  const base = new URL(opts.publicUrl);
  let parsed: URL;
  try {
    parsed = new URL(value, base);
  } catch {
    return undefined;
  }
  if (parsed.username || parsed.password || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')) {
    return undefined;
  }
  if (!value.startsWith('/') && isAllowlisted(parsed.href, opts.allowlist)) {
    return parsed.href;
  }
  return parsed.origin === base.origin ? `${parsed.pathname}${parsed.search}${parsed.hash}` : undefined;
}

function isAllowlisted(href: string, allowlist: readonly string[] | undefined): boolean {
  return (allowlist ?? []).some((entry) => {
    try {
      return new URL(entry).href === href;
    } catch {
      return false;
    }
  });
}

/** A base on no one's origin: a path must stay on whatever origin it is resolved against. */
const OTHER_BASE = 'https://return-to-check.invalid/a/b';

/**
 * The rule, on the final string as the browser will read it from a Location header: either an
 * exactly allowlisted http(s) URL without credentials, or a path that stays on the origin it is
 * resolved against (svc's, and any other: so no `//`, no `/\`, no scheme), that the browser's own
 * parsing leaves unchanged (no dot segments or encodings left to normalize into something else),
 * and that still has none of those shapes once percent-decoded (for anything along the way that
 * decodes before it resolves). Printable ASCII only: svc serializes what it returns.
 */
export function isSafeLocation(location: string, opts: { publicUrl: string; allowlist?: readonly string[] }): boolean {
  if (location.length === 0 || location.length > MAX_RETURN_TO || /[^\u0021-\u007e]|\\/.test(location)) {
    return false;
  }
  if (/^https?:\/\//i.test(location)) {
    let parsed: URL;
    try {
      parsed = new URL(location);
    } catch {
      return false;
    }
    return parsed.href === location && !parsed.username && !parsed.password && isAllowlisted(location, opts.allowlist);
  }
  if (!location.startsWith('/') || location.startsWith('//')) {
    return false;
  }
  for (const base of [opts.publicUrl, OTHER_BASE]) {
    let resolved: URL;
    try {
      resolved = new URL(location, base);
    } catch {
      return false;
    }
    if (resolved.origin !== new URL(base).origin || `${resolved.pathname}${resolved.search}${resolved.hash}` !== location) {
      return false;
    }
  }
  // Decoded once a broken escape is refused; decoded again (double encoding), a broken escape
  // just means nothing would decode it further.
  let decoded = location;
  for (let round = 0; round < 3; round++) {
    let next: string;
    try {
      next = decodeURIComponent(decoded);
    } catch {
      return round > 0;
    }
    if (CONTROL_OR_BACKSLASH.test(next) || next.startsWith('//')) {
      return false;
    }
    if (next === decoded) {
      break;
    }
    decoded = next;
  }
  return true;
}

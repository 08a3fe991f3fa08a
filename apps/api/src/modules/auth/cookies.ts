import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Cookie names and attributes. On https the `__Host-` prefix pins a cookie to our exact origin
 * (Secure, Path=/, no Domain), so a sibling subdomain cannot set or shadow it. Our names never
 * match the engine's, since browsers share cookies across ports of one host.
 */
export type CookieNames = { session: string; pendingLogin: string; trySignIn: string; logout: string; secure: boolean };

export function cookieNames(publicUrl: string): CookieNames {
  const secure = publicUrl.startsWith('https:');
  const prefix = secure ? '__Host-' : '';
  return {
    session: `${prefix}svc_session`,
    pendingLogin: `${prefix}svc_pending_login`,
    trySignIn: `${prefix}svc_try_signin`,
    // An application's sign-out while the browser visits the engine's end-session endpoint.
    logout: `${prefix}svc_logout`,
    secure,
  };
}

export function readCookie(req: IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) {
    return undefined;
  }
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) {
      return part.slice(eq + 1).trim();
    }
  }
  return undefined;
}

/** HttpOnly, SameSite=Lax, Path=/, Secure on https; maxAgeSeconds 0 deletes it. */
export function setCookie(res: ServerResponse, names: CookieNames, name: string, value: string, maxAgeSeconds: number): void {
  const attributes = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax', `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`];
  if (names.secure) {
    attributes.push('Secure');
  }
  const existing = res.getHeader('Set-Cookie');
  const list = Array.isArray(existing) ? existing : existing ? [String(existing)] : [];
  res.setHeader('Set-Cookie', [...list, attributes.join('; ')]);
}

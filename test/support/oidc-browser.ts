import { CookieJar } from '../../apps/dev-engine/src/cookie-jar.ts';

/** The development engine's seeded people (apps/dev-engine); `social` signs in with the social button. */
export const PEOPLE = {
  user: { email: 'user@svc.local', password: 'user-password' },
  admin: { email: 'admin@svc.local', password: 'admin-password' },
  social: { email: 'social@svc.local', password: '' },
} as const;
export type Person = keyof typeof PEOPLE;

/**
 * Plays the browser of a sign-in to an application through svc's OpenID Provider, with a cookie
 * jar: from an authorization URL (or anything that redirects to one) until the application's
 * `redirectUri`. Goes through svc's hosted sign-in page (as its form submits), the development
 * engine's login form, when asked to `pick`, the hosted organization choice and, when given a
 * `consent` decision, a third-party client's consent page. Records what it went through:
 * 'svc-sign-in', 'engine', 'pick-organization', 'consent'.
 */
export async function browseToRedirect(
  jar: CookieJar,
  url: URL | string,
  opts: { svcUrl: string; redirectUri: string; person?: Person; pick?: string; consent?: 'allow' | 'deny' },
): Promise<{ callback: URL; steps: string[]; pages: string[] }> {
  const steps: string[] = [];
  const pages: string[] = [];
  const person = PEOPLE[opts.person ?? 'user'];
  let current = new URL(url).href;
  for (let hop = 0; hop < 40; hop++) {
    if (current.startsWith(opts.redirectUri)) {
      return { callback: new URL(current), steps, pages };
    }
    const res = await jar.fetch(current);
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      await res.body?.cancel();
      current = new URL(location, current).href;
      continue;
    }
    const html = await res.text();
    pages.push(html);
    const here = new URL(current);
    if (here.origin === opts.svcUrl && html.includes('name="login_hint"')) {
      steps.push('svc-sign-in');
      // The form's hidden fields (return_to, prompt), as a browser would submit them.
      const query = new URLSearchParams(
        [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]+)">/g)].map((m): [string, string] => [
          m[1] as string,
          m[2] as string,
        ]),
      );
      if (opts.person === 'social') {
        query.set('method', 'social');
      } else {
        query.set('login_hint', person.email);
      }
      current = `${opts.svcUrl}/auth/login?${query}`;
      continue;
    }
    if (here.origin === opts.svcUrl && html.includes('data-testid="pick-organization"')) {
      steps.push('pick-organization');
      const id = new RegExp(`value="([^"]+)" data-testid="pick-organization" data-slug="${opts.pick}"`).exec(html)?.[1];
      if (!id) {
        throw new Error(`organization ${opts.pick} is not offered on the hosted page`);
      }
      const posted = await jar.fetch(current, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: opts.svcUrl },
        body: new URLSearchParams({ organization: id }).toString(),
      });
      if (posted.status !== 303) {
        throw new Error(`picking ${opts.pick} answered ${posted.status}`);
      }
      current = new URL(posted.headers.get('location') as string, current).href;
      continue;
    }
    if (here.origin === opts.svcUrl && html.includes('data-testid="consent-allow"')) {
      steps.push('consent');
      if (!opts.consent) {
        throw new Error(`a consent page at ${current}, and no decision to give`);
      }
      const posted = await jar.fetch(current, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: opts.svcUrl },
        body: new URLSearchParams({ decision: opts.consent }).toString(),
      });
      if (posted.status !== 303) {
        throw new Error(`the consent answered ${posted.status}`);
      }
      current = new URL(posted.headers.get('location') as string, current).href;
      continue;
    }
    if (here.origin !== opts.svcUrl && res.status === 200) {
      steps.push('engine');
      const submitted = await jar.post(current, { email: person.email, password: person.password });
      current = new URL(submitted.headers.get('location') as string, current).href;
      continue;
    }
    // The page's words, not its stylesheet (every hosted page inlines one).
    throw new Error(`stuck at ${current} (${res.status}): ${html.replace(/<style>[\s\S]*?<\/style>/g, '').slice(0, 500)}`);
  }
  throw new Error('too many hops');
}

export { CookieJar };

import type { ServerResponse } from 'node:http';
import helmet, { type HelmetOptions } from 'helmet';

/**
 * helmet's headers, computed once at startup; setting them is then one loop per request. The
 * header set does not depend on the request, and running helmet's dozen middlewares on every
 * request measurably cost the hot public routes.
 */
export function compileSecurityHeaders(options: HelmetOptions): (res: ServerResponse) => void {
  const headers: [string, string][] = [];
  const probe = {
    setHeader: (name: string, value: string) => {
      headers.push([name, value]);
    },
    // helmet removes X-Powered-By; the app disables it at the source instead.
    removeHeader: () => {},
  };
  // biome-ignore lint/suspicious/noExplicitAny: a probe standing in for req/res; helmet only calls setHeader/removeHeader.
  helmet(options)(probe as any, probe as any, () => {});
  return (res) => {
    for (const [name, value] of headers) {
      res.setHeader(name, value);
    }
  };
}

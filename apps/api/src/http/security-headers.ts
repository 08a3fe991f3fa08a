import type { NextFunction, Request, Response } from 'express';
import helmet, { type HelmetOptions } from 'helmet';

/**
 * helmet's headers, computed once at startup and then set with one loop per request. The header
 * set does not depend on the request, and running helmet's dozen middlewares on every request
 * measurably cost the hot public routes.
 */
export function securityHeaders(options: HelmetOptions) {
  const headers: [string, string][] = [];
  const probe = {
    setHeader: (name: string, value: string) => {
      headers.push([name, value]);
    },
    // helmet removes X-Powered-By; the app disables it at the source instead.
    removeHeader: () => {},
  };
  helmet(options)(probe as unknown as Request, probe as unknown as Response, () => {});
  return (_req: Request, res: Response, next: NextFunction): void => {
    for (const [name, value] of headers) {
      res.setHeader(name, value);
    }
    next();
  };
}

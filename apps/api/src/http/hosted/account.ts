import { Router } from 'express';
import type { AppServices } from '../../context.ts';
import { describeMe } from '../../modules/me/service.ts';
import { accountPage } from './account-pages.ts';
import { sendHostedPage } from './page.ts';
import { pageSessionOrSignIn } from './require-session.ts';

/** /user (README.md "Sign-in"): the hosted account page; anonymous requests go to hosted sign-in. */
export function accountRouter(services: AppServices): Router {
  const r = Router();
  r.get('/user', async (req, res) => {
    const current = await pageSessionOrSignIn(services, req, res);
    if (!current) {
      return;
    }
    const me = await describeMe(services.db, current);
    sendHostedPage(res, 200, accountPage(me, services.config.engine.offers), { noStore: true });
  });
  return r;
}

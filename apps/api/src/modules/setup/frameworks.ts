import type { TFramework } from '@svc/contracts/agent-context';
import { django } from './frameworks/django.ts';
import { express } from './frameworks/express.ts';
import { fastapi } from './frameworks/fastapi.ts';
import { flask } from './frameworks/flask.ts';
import { laravel } from './frameworks/laravel.ts';
import { mcp } from './frameworks/mcp.ts';
import { nextjs } from './frameworks/nextjs.ts';
import { rails } from './frameworks/rails.ts';
import { react } from './frameworks/react.ts';
import { rest } from './frameworks/rest.ts';
import type { FrameworkSpec } from './frameworks/shared.ts';

export type { AppFile, EnvVarSpec, FrameworkSpec, PublicValue, WiringValues } from './frameworks/shared.ts';

/**
 * The per-framework table, exhaustive over TFramework. Each framework's integration lives in its
 * own file under ./frameworks, on the established OIDC client of its ecosystem.
 */
export const FRAMEWORKS: { readonly [K in TFramework]: FrameworkSpec & { id: K } } = {
  nextjs,
  react,
  express,
  fastapi,
  django,
  flask,
  laravel,
  rails,
  rest,
  mcp,
};

import { AppError } from '@svc/contracts/errors';
import type { TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { callProcedure, compileProcedure, isMemoizedAnswer, type ProcedureDef } from './call.ts';
import { publicProcedure } from './init.ts';
import { appRouter } from './router.ts';

type AnyProcedure = ((opts: object) => Promise<unknown>) & { _def: ProcedureDef };

const ctx = { requestId: 'req_test' } as unknown as RequestContext;

/** What tRPC's own caller answers (/trpc's way), as `{ data }` or `{ error }`. */
async function viaTrpc(procedure: unknown, input: unknown) {
  const call = procedure as AnyProcedure;
  return call({ ctx, getRawInput: async () => input, path: 'p', type: call._def.type, signal: undefined, batchIndex: 0 }).then(
    (data) => ({ data }),
    (error: TRPCError) => ({
      error: { code: error.code, message: error.message, cause: (error.cause as Error | undefined)?.constructor.name },
    }),
  );
}

/** What /v1's runner answers, in the same shape. */
async function viaRunner(procedure: unknown, input: unknown) {
  const compiled = compileProcedure('p', (procedure as AnyProcedure)._def);
  return callProcedure(compiled, 'p', ctx, input).then(
    (data) => ({ data }),
    (error: TRPCError) => ({
      error: { code: error.code, message: error.message, cause: (error.cause as Error | undefined)?.constructor.name },
    }),
  );
}

const withTag = publicProcedure.use(async ({ next }) => next({ ctx: { tag: 'first' } }));
const procedures = {
  echo: withTag
    .use(async ({ ctx, next }) => next({ ctx: { seen: (ctx as { tag?: string }).tag } }))
    .input(z.object({ n: z.coerce.number().int().min(1) }))
    .output(z.object({ n: z.number(), seen: z.string() }))
    .query(({ input, ctx }) => ({ n: input.n, seen: (ctx as { seen: string }).seen, extra: 'stripped by the output schema' })),
  lies: publicProcedure
    .input(z.object({}))
    .output(z.object({ n: z.number() }))
    .query(() => ({ n: 'not a number' }) as unknown as { n: number }),
  refuses: publicProcedure.input(z.object({})).query(() => {
    throw new AppError('not_found', 'no such thing');
  }),
  refusedByMiddleware: publicProcedure
    .use(async () => {
      throw new AppError('forbidden', 'not yours');
    })
    .input(z.object({}))
    .query(() => 'unreachable'),
  rewritesInput: publicProcedure
    .use(async ({ getRawInput, next }) => next({ getRawInput: async () => ({ ...((await getRawInput()) as object), added: 'x' }) }))
    .input(z.object({ added: z.string() }))
    .query(({ input }) => input.added),
  twoInputs: publicProcedure
    .input(z.object({ a: z.string() }))
    .input(z.object({ b: z.string() }))
    .query(({ input }) => input),
  asyncRefine: publicProcedure
    .input(z.object({ v: z.string() }).refine(async (value) => value.v === 'ok', 'not ok'))
    .query(({ input }) => input.v),
};

describe('/v1 procedure runner (trpc/call.ts)', () => {
  it.each([
    ['echo', { n: '3' }],
    ['echo', { n: '0' }],
    ['echo', { n: 'x' }],
    ['echo', 'not an object'],
    ['lies', {}],
    ['refuses', {}],
    ['refusedByMiddleware', {}],
    ['rewritesInput', {}],
    ['twoInputs', { a: 'A', b: 'B' }],
    ['twoInputs', { a: 'A' }],
    ['asyncRefine', { v: 'ok' }],
    ['asyncRefine', { v: 'no' }],
  ] as const)('answers %s(%j) exactly as tRPC does', async (name, input) => {
    const procedure = procedures[name];
    const expected = await viaTrpc(procedure, input);
    expect(await viaRunner(procedure, input)).toEqual(expected);
  });

  it('passes merged context, parsed input and the output schema', async () => {
    expect(await viaRunner(procedures.echo, { n: '3' })).toEqual({ data: { n: 3, seen: 'first' } });
    expect(await viaRunner(procedures.lies, {})).toMatchObject({
      error: { code: 'INTERNAL_SERVER_ERROR', message: 'Output validation failed' },
    });
    expect(await viaRunner(procedures.echo, { n: '0' })).toMatchObject({ error: { code: 'BAD_REQUEST', cause: 'ZodError' } });
  });

  it('checks a frozen answer against the output schema once, and a fresh answer every time', async () => {
    let parses = 0;
    const counted = z.object({ n: z.number() }).transform((value) => {
      parses++;
      return value;
    });
    const frozen = Object.freeze({ n: 1 });
    const same = publicProcedure
      .input(z.void())
      .output(counted)
      .query(() => frozen);
    const fresh = publicProcedure
      .input(z.void())
      .output(counted)
      .query(() => ({ n: 1 }));
    const compiledSame = compileProcedure('same', (same as unknown as AnyProcedure)._def);
    const compiledFresh = compileProcedure('fresh', (fresh as unknown as AnyProcedure)._def);
    const answers: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      answers.push(await callProcedure(compiledSame, 'same', ctx, undefined));
      expect(answers.at(-1)).toEqual({ n: 1 });
    }
    expect(parses).toBe(1);
    // The checked copy is one frozen object, which the /v1 adapter may serialize once.
    expect(answers[1]).toBe(answers[0]);
    expect(Object.isFrozen(answers[0])).toBe(true);
    expect(isMemoizedAnswer(answers[0])).toBe(true);
    for (let i = 0; i < 3; i++) {
      expect(isMemoizedAnswer(await callProcedure(compiledFresh, 'fresh', ctx, undefined))).toBe(false);
    }
    expect(parses).toBe(4);
    // A frozen object the runner did not check itself is not taken for one it did.
    expect(isMemoizedAnswer(frozen)).toBe(false);
  });

  it('does not remember a frozen answer that failed its output schema', async () => {
    const frozen = Object.freeze({ n: 'one' });
    const procedure = publicProcedure
      .input(z.void())
      .output(z.object({ n: z.number() }))
      .query(() => frozen as unknown as { n: number });
    const compiled = compileProcedure('p', (procedure as unknown as AnyProcedure)._def);
    for (let i = 0; i < 2; i++) {
      await expect(callProcedure(compiled, 'p', ctx, undefined)).rejects.toMatchObject({ message: 'Output validation failed' });
    }
  });

  it('refuses at startup a procedure whose middleware list it does not know', () => {
    const def = (procedures.echo as unknown as AnyProcedure)._def;
    const stranger = Object.assign(async () => ({ ok: true }), { _type: 'errors' });
    expect(() => compileProcedure('p', { ...def, middlewares: [stranger, ...def.middlewares] } as ProcedureDef)).toThrow(
      /unknown tRPC middleware kind errors/,
    );
    expect(() => compileProcedure('p', { ...def, middlewares: def.middlewares.slice(0, -1) } as ProcedureDef)).toThrow(
      /not tRPC's resolver/,
    );
    expect(() => compileProcedure('p', { ...def, type: 'subscription' })).toThrow(/subscriptions/);
  });

  it('compiles every procedure of the router', () => {
    const all = Object.entries(appRouter._def.procedures) as unknown as [string, AnyProcedure][];
    expect(all.length).toBeGreaterThan(50);
    for (const [path, procedure] of all) {
      if (procedure._def.type !== 'subscription') {
        expect(() => compileProcedure(path, procedure._def), path).not.toThrow();
      }
    }
  });
});

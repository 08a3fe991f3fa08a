import { getTRPCErrorFromUnknown, TRPCError } from '@trpc/server';
import type { RequestContext } from '../context.ts';
import type { Meta } from './init.ts';

/**
 * How `/v1` (http/rest.ts) calls a procedure: the same middlewares, input and output schemas and
 * resolver that tRPC runs for `/trpc`, in the same order and with the same results, without the
 * layers tRPC's general caller adds to every step (an options object copied per middleware, an
 * async wrapper and a promise around each schema, the resolver and every `next`). Profiled
 * under load, those layers cost the hot routes about as much as the routes' own work.
 *
 * The procedure's definition is read once (`compileProcedure`, at startup): its middleware list
 * holds svc's middlewares, tRPC's input and output validators (marked `_type`) and, last, the
 * resolver. Anything else (an error formatter middleware, a caller override) is refused at
 * startup, so a tRPC release that changes the list fails loudly rather than skipping a step.
 */

/** A middleware's answer, as tRPC's `next()` returns it. */
type Result =
  | { ok: true; data: unknown; ctx: object; marker: 'middlewareMarker' }
  | { ok: false; error: TRPCError; marker: 'middlewareMarker' };

type NextOptions = { ctx?: object; input?: unknown; getRawInput?: () => Promise<unknown> };

type MiddlewareOptions = {
  ctx: object;
  type: 'query' | 'mutation';
  path: string;
  input: unknown;
  getRawInput: () => Promise<unknown>;
  meta: Meta | undefined;
  signal: undefined;
  batchIndex: number;
  next: (opts?: NextOptions) => Promise<Result>;
};

type Middleware = ((opts: MiddlewareOptions) => Promise<Result>) & { _type?: string };
type Parser = (value: unknown) => unknown;
type Schema = { parse: Parser; parseAsync: (value: unknown) => Promise<unknown> };

/** The parts of a procedure's `_def` the runner reads (tRPC 11). */
export type ProcedureDef = {
  type: 'query' | 'mutation' | 'subscription';
  meta?: Meta;
  middlewares: Middleware[];
  inputs: unknown[];
  output?: unknown;
  resolver?: (opts: Omit<MiddlewareOptions, 'next'>) => unknown;
  caller?: unknown;
};

type Step =
  | { kind: 'middleware'; fn: Middleware }
  | { kind: 'input'; parse: Parser }
  | { kind: 'output'; parse: Parser }
  | { kind: 'resolver'; fn: NonNullable<ProcedureDef['resolver']> };

export type CompiledProcedure = {
  steps: Step[];
  type: 'query' | 'mutation';
  meta: Meta | undefined;
};

const MARKER = 'middlewareMarker' as const;

/** A zod schema parsed synchronously, asynchronously only when it must (as svc's patched tRPC does). */
function parserOf(schema: unknown): Parser {
  const zod = schema as Schema;
  if (typeof zod?.parse !== 'function' || typeof zod.parseAsync !== 'function') {
    throw new Error('a /v1 procedure schema must be a zod schema');
  }
  return (value) => {
    try {
      return zod.parse(value);
    } catch (error) {
      if ((error as Error)?.constructor?.name === '$ZodAsyncError') {
        return zod.parseAsync(value);
      }
      throw error;
    }
  };
}

/** The procedure's steps, read once. Throws for a definition the runner does not know. */
export function compileProcedure(path: string, def: ProcedureDef): CompiledProcedure {
  if (def.type === 'subscription' || def.caller) {
    throw new Error(`${path}: subscriptions and caller overrides are not served on /v1`);
  }
  const steps: Step[] = [];
  let inputs = 0;
  def.middlewares.forEach((fn, index) => {
    const last = index === def.middlewares.length - 1;
    if (fn._type === 'input') {
      steps.push({ kind: 'input', parse: parserOf(def.inputs[inputs++]) });
    } else if (fn._type === 'output') {
      steps.push({ kind: 'output', parse: parserOf(def.output) });
    } else if (fn._type !== undefined) {
      throw new Error(`${path}: unknown tRPC middleware kind ${fn._type}`);
    } else if (last) {
      if (!def.resolver || fn.name !== 'resolveMiddleware') {
        throw new Error(`${path}: the last middleware is not tRPC's resolver`);
      }
      steps.push({ kind: 'resolver', fn: def.resolver });
    } else {
      steps.push({ kind: 'middleware', fn });
    }
  });
  if (steps.at(-1)?.kind !== 'resolver') {
    throw new Error(`${path}: the last middleware is not tRPC's resolver`);
  }
  if (inputs !== def.inputs.length) {
    throw new Error(`${path}: ${def.inputs.length} input schemas but ${inputs} input validators`);
  }
  return { steps, type: def.type, meta: def.meta };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}

function isPromise(value: unknown): value is Promise<unknown> {
  return !!value && typeof (value as { then?: unknown }).then === 'function';
}

/**
 * Answers already checked against the output schema, by identity: a route that answers the same
 * frozen object each time (client config, built once per cached application) is checked once.
 */
const checkedAnswers = new WeakMap<object, unknown>();
/** The checked copies `checkedAnswers` hands out: never changed after the check (see isMemoizedAnswer). */
const memoized = new WeakSet<object>();

/**
 * True for an answer this module checked once and answers again by identity (a frozen answer's
 * checked copy): the same object, never changed, on every call. The /v1 adapter keeps its JSON.
 */
export function isMemoizedAnswer(data: unknown): boolean {
  return typeof data === 'object' && data !== null && memoized.has(data);
}

type Call = {
  procedure: CompiledProcedure;
  path: string;
  ctx: RequestContext;
  getRawInput: () => Promise<unknown>;
};

/** Runs steps[index..] as tRPC's `next()` would: never throws, answers a Result. */
function runFrom(call: Call, index: number, ctx: object, input: unknown, getRawInput: () => Promise<unknown>): Promise<Result> | Result {
  const step = call.procedure.steps[index] as Step;
  try {
    switch (step.kind) {
      case 'input': {
        // tRPC's input validator: the raw input through the schema, merged over earlier inputs.
        return getRawInput().then(
          (raw) => {
            let parsed: unknown;
            try {
              parsed = step.parse(raw);
            } catch (cause) {
              return badInput(cause);
            }
            return isPromise(parsed)
              ? parsed.then((value) => afterInput(call, index, ctx, input, getRawInput, value), badInput)
              : afterInput(call, index, ctx, input, getRawInput, parsed);
          },
          (cause: unknown) => failed(getTRPCErrorFromUnknown(cause)),
        );
      }
      case 'output': {
        const downstream = runFrom(call, index + 1, ctx, input, getRawInput);
        return isPromise(downstream) ? downstream.then((result) => checkOutput(step.parse, result)) : checkOutput(step.parse, downstream);
      }
      case 'resolver': {
        const data = step.fn(optionsOf(call, ctx, input, getRawInput));
        return isPromise(data)
          ? data.then(
              (value) => answered(ctx, value),
              (cause: unknown) => failed(getTRPCErrorFromUnknown(cause)),
            )
          : answered(ctx, data);
      }
      case 'middleware': {
        const options = optionsOf(call, ctx, input, getRawInput) as MiddlewareOptions;
        options.next = (next) =>
          Promise.resolve(
            runFrom(
              call,
              index + 1,
              next?.ctx ? { ...ctx, ...next.ctx } : ctx,
              next && 'input' in next ? next.input : input,
              next?.getRawInput ?? getRawInput,
            ),
          );
        const returned = step.fn(options);
        return isPromise(returned) ? returned.catch((cause: unknown) => failed(getTRPCErrorFromUnknown(cause))) : returned;
      }
    }
  } catch (cause) {
    return failed(getTRPCErrorFromUnknown(cause));
  }
}

/*
 * The steps' continuations are functions of this module rather than closures named inside
 * runFrom: tsx compiles with esbuild's keepNames, which gives every named closure its name with
 * a defineProperty call each time the closure is made, on every step of every call.
 */

/** After the input step: the parsed value merged over earlier inputs, then the next step. */
function afterInput(
  call: Call,
  index: number,
  ctx: object,
  input: unknown,
  getRawInput: () => Promise<unknown>,
  value: unknown,
): Promise<Result> | Result {
  return runFrom(call, index + 1, ctx, isObject(input) && isObject(value) ? { ...input, ...value } : value, getRawInput);
}

function badInput(cause: unknown): Result {
  return failed(new TRPCError({ code: 'BAD_REQUEST', cause }));
}

/** The output step: the answer through the output schema, once per frozen answer. */
function checkOutput(parse: Parser, result: Result): Result | Promise<Result> {
  if (!result.ok) {
    return result;
  }
  const frozen = isObject(result.data) && Object.isFrozen(result.data);
  if (frozen && checkedAnswers.has(result.data as object)) {
    return { ...result, data: checkedAnswers.get(result.data as object) };
  }
  try {
    const data = parse(result.data);
    return isPromise(data) ? data.then((checked) => keepChecked(result, frozen, checked), outputFailed) : keepChecked(result, frozen, data);
  } catch (cause) {
    return outputFailed(cause);
  }
}

function keepChecked(result: Extract<Result, { ok: true }>, frozen: boolean, data: unknown): Result {
  if (frozen && isObject(data)) {
    checkedAnswers.set(result.data as object, Object.freeze(data));
    memoized.add(data);
  }
  return { ...result, data };
}

function outputFailed(cause: unknown): Result {
  return failed(new TRPCError({ message: 'Output validation failed', code: 'INTERNAL_SERVER_ERROR', cause }));
}

function answered(ctx: object, data: unknown): Result {
  return { ok: true, data, ctx, marker: MARKER };
}

function optionsOf(call: Call, ctx: object, input: unknown, getRawInput: () => Promise<unknown>): Omit<MiddlewareOptions, 'next'> {
  return {
    ctx,
    type: call.procedure.type,
    path: call.path,
    input,
    getRawInput,
    meta: call.procedure.meta,
    signal: undefined,
    batchIndex: 0,
  };
}

function failed(error: TRPCError): Result {
  return { ok: false, error, marker: MARKER };
}

/** A function answering `value` (made here, unnamed: see the note on keepNames above). */
function constantOf<T>(value: T): () => T {
  return () => value;
}

/** Calls a compiled procedure: its answer, or the TRPCError tRPC would have thrown. */
export async function callProcedure(procedure: CompiledProcedure, path: string, ctx: RequestContext, input: unknown): Promise<unknown> {
  const getRawInput = constantOf(Promise.resolve(input));
  const result = await runFrom({ procedure, path, ctx, getRawInput }, 0, ctx, undefined, getRawInput);
  if (!result.ok) {
    throw result.error;
  }
  return result.data;
}

import { ZodError } from 'zod';

/**
 * How deep a request's JSON may nest (objects and arrays). Nothing svc accepts comes near it
 * (usage properties stop at 5 levels); deeper input is refused before any schema or recursive
 * code walks it, so a megabyte of `[[[[...` cannot overflow a stack.
 */
export const MAX_INPUT_DEPTH = 64;

/** A UTF-16 surrogate without its other half: not a Unicode character, and no valid UTF-8. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why a string cannot be stored as text, or undefined. PostgreSQL refuses the NUL character in
 * `text` and `jsonb` (error 22021) and a lone surrogate cannot be encoded as UTF-8 (jsonb refuses
 * its `\ud800` escape): letting either reach a statement turned bad input into a 500.
 */
function textProblem(value: string): string | undefined {
  if (value.includes('\u0000')) {
    return 'may not contain the NUL character';
  }
  if (LONE_SURROGATE.test(value)) {
    return 'may not contain an unpaired UTF-16 surrogate';
  }
  return undefined;
}

/** A node of the walk; the path is rebuilt from parents only when something is refused. */
type Node = { value: unknown; depth: number; key: string | number | undefined; parent: Node | undefined };

/** The one issue of refused input, as a ZodError: every transport answers it as it answers a schema's. */
function refusal(node: Node | undefined, message: string): ZodError {
  const path: (string | number)[] = [];
  for (let n = node; n?.key !== undefined; n = n.parent) {
    path.unshift(n.key);
  }
  return new ZodError([{ code: 'custom', path, message, input: undefined }]);
}

/**
 * The one rule every request's input passes before a schema sees it, whichever route and
 * transport carry it: the tRPC procedures (`/trpc` and `/v1`: trpc/init.ts), the JSON body reader
 * (json-body.ts: `/v1` bodies and usage ingestion), and the request line (edge.ts refuses `%00`).
 * Refuses nesting deeper than MAX_INPUT_DEPTH and any string or object key that PostgreSQL cannot
 * store (textProblem), as a ZodError with one issue naming where: a 400 validation_failed with
 * `issues`, like any other invalid input. Walks without recursion, so any depth is safe to check.
 */
export function refusedInput(value: unknown): ZodError | undefined {
  const isObject = typeof value === 'object' && value !== null;
  if (isObject && accepted.has(value)) {
    return undefined;
  }
  const refused = walk(value);
  if (!refused && isObject) {
    accepted.add(value);
  }
  return refused;
}

/**
 * Objects refusedInput accepted as a whole: a /v1 body is checked as it is read (json-body.ts)
 * and handed on as the procedure's raw input, which the procedure's input rule would otherwise
 * walk a second time. Inputs are never changed in place after the check.
 */
const accepted = new WeakSet<object>();

function walk(value: unknown): ZodError | undefined {
  const stack: Node[] = [{ value, depth: 0, key: undefined, parent: undefined }];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    const current = node.value;
    if (typeof current === 'string') {
      const problem = textProblem(current);
      if (problem) {
        return refusal(node, `text ${problem}`);
      }
      continue;
    }
    if (current === null || typeof current !== 'object') {
      continue;
    }
    if (node.depth >= MAX_INPUT_DEPTH) {
      return refusal(node, `input may nest at most ${MAX_INPUT_DEPTH} levels of objects and arrays`);
    }
    const depth = node.depth + 1;
    if (Array.isArray(current)) {
      for (let index = 0; index < current.length; index++) {
        stack.push({ value: current[index], depth, key: index, parent: node });
      }
      continue;
    }
    for (const key of Object.keys(current)) {
      const problem = textProblem(key);
      if (problem) {
        return refusal(node, `a key ${problem}`);
      }
      stack.push({ value: (current as Record<string, unknown>)[key], depth, key, parent: node });
    }
  }
  return undefined;
}

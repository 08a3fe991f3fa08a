import type { ScimFilter } from '@svc/db/queries/directories';

/**
 * A bounded parser of SCIM filters and PATCH paths (RFC 7644 sections 3.4.2.2 and 3.5.2;
 * docs/enterprise.md "Directory sync"). Written here rather than taken from npm: the filter is
 * turned into SQL over the few attributes svc stores, so the parser must resolve each attribute
 * against that list, and it must stay bounded whatever it is sent. Limits: MAX_FILTER_LENGTH
 * characters, MAX_CLAUSES comparisons, MAX_DEPTH levels of parentheses or `not`; past any of
 * them the answer is 400 invalidFilter before anything deeper is read.
 */

export const MAX_FILTER_LENGTH = 4096;
export const MAX_CLAUSES = 50;
export const MAX_DEPTH = 8;

/** A filter or path svc refuses: the SCIM error's scimType and a message for the integrator. */
export class ScimFilterError extends Error {
  constructor(
    readonly scimType: 'invalidFilter' | 'invalidPath',
    message: string,
  ) {
    super(message);
  }
}

type Token =
  | { t: 'word'; v: string }
  | { t: 'string'; v: string }
  | { t: 'number'; v: number }
  | { t: '(' | ')' | '[' | ']' }
  | { t: 'end' };

const COMPARE_OPS = new Set(['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le']);

/** Attribute names and dotted paths, with an optional schema URN in front (`urn:...:User:userName`). */
const WORD = /[A-Za-z0-9_$:.-]/;

function tokenize(text: string, kind: ScimFilterError['scimType']): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
    } else if (c === '(' || c === ')' || c === '[' || c === ']') {
      tokens.push({ t: c });
      i++;
    } else if (c === '"') {
      let out = '';
      i++;
      for (;;) {
        if (i >= text.length) {
          throw new ScimFilterError(kind, 'a string is not closed');
        }
        const d = text[i] as string;
        if (d === '"') {
          i++;
          break;
        }
        if (d === '\\') {
          const e = text[i + 1];
          if (e === undefined) {
            throw new ScimFilterError(kind, 'a string is not closed');
          }
          if (e === 'u') {
            const hex = text.slice(i + 2, i + 6);
            if (!/^[0-9A-Fa-f]{4}$/.test(hex)) {
              throw new ScimFilterError(kind, 'a \\u escape needs four hex digits');
            }
            out += String.fromCharCode(Number.parseInt(hex, 16));
            i += 6;
            continue;
          }
          const escapes: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
          const mapped = escapes[e];
          if (mapped === undefined) {
            throw new ScimFilterError(kind, `unknown escape \\${e} in a string`);
          }
          out += mapped;
          i += 2;
          continue;
        }
        out += d;
        i++;
      }
      tokens.push({ t: 'string', v: out });
    } else if (WORD.test(c)) {
      let j = i;
      while (j < text.length && WORD.test(text[j] as string)) {
        j++;
      }
      const word = text.slice(i, j);
      if (/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(word)) {
        tokens.push({ t: 'number', v: Number(word) });
      } else {
        tokens.push({ t: 'word', v: word });
      }
      i = j;
    } else {
      throw new ScimFilterError(kind, `unexpected character ${JSON.stringify(c)} at ${i}`);
    }
  }
  tokens.push({ t: 'end' });
  return tokens;
}

/** A schema URN in front of an attribute, as RFC 7644 lets a client write it. */
const CORE_URN = /^urn:ietf:params:scim:schemas:core:2\.0:(User|Group):/i;

/**
 * The attribute a path names, lower-cased, without the core schema's URN; anything else with a
 * URN (the enterprise extension, unknown schemas) is kept whole, lower-cased.
 */
export function normalizeAttribute(path: string): string {
  return path.replace(CORE_URN, '').toLowerCase();
}

/**
 * Parses a filter; every attribute it names must be one of `known` (lower-case names, `a.b` for
 * sub-attributes; `a[b op v]` is read as `a.b op v`). Throws ScimFilterError.
 */
export function parseFilter(text: string, known: ReadonlySet<string>): ScimFilter {
  if (text.length > MAX_FILTER_LENGTH) {
    throw new ScimFilterError('invalidFilter', `a filter may be at most ${MAX_FILTER_LENGTH} characters`);
  }
  const parser = new Parser(tokenize(text, 'invalidFilter'), known);
  const filter = parser.orExpr(0, undefined);
  parser.expect('end');
  return filter;
}

class Parser {
  private at = 0;
  private clauses = 0;

  constructor(
    private readonly tokens: Token[],
    private readonly known: ReadonlySet<string>,
  ) {}

  private peek(): Token {
    return this.tokens[this.at] as Token;
  }

  private next(): Token {
    const token = this.tokens[this.at] as Token;
    this.at++;
    return token;
  }

  expect(t: Token['t']): void {
    const token = this.next();
    if (token.t !== t) {
      throw new ScimFilterError('invalidFilter', `expected ${t === 'end' ? 'the end of the filter' : t}, found ${describe(token)}`);
    }
  }

  private isWord(value: string): boolean {
    const token = this.peek();
    return token.t === 'word' && token.v.toLowerCase() === value;
  }

  orExpr(depth: number, prefix: string | undefined): ScimFilter {
    const items = [this.andExpr(depth, prefix)];
    while (this.isWord('or')) {
      this.next();
      items.push(this.andExpr(depth, prefix));
    }
    return items.length === 1 ? (items[0] as ScimFilter) : { kind: 'or', items };
  }

  private andExpr(depth: number, prefix: string | undefined): ScimFilter {
    const items = [this.unary(depth, prefix)];
    while (this.isWord('and')) {
      this.next();
      items.push(this.unary(depth, prefix));
    }
    return items.length === 1 ? (items[0] as ScimFilter) : { kind: 'and', items };
  }

  private unary(depth: number, prefix: string | undefined): ScimFilter {
    if (depth >= MAX_DEPTH) {
      throw new ScimFilterError('invalidFilter', `a filter may nest at most ${MAX_DEPTH} levels`);
    }
    if (this.isWord('not')) {
      this.next();
      this.expect('(');
      const inner = this.orExpr(depth + 1, prefix);
      this.expect(')');
      return { kind: 'not', filter: inner };
    }
    if (this.peek().t === '(') {
      this.next();
      const inner = this.orExpr(depth + 1, prefix);
      this.expect(')');
      return inner;
    }
    return this.attrExpr(depth, prefix);
  }

  private attrExpr(depth: number, prefix: string | undefined): ScimFilter {
    const token = this.next();
    if (token.t !== 'word') {
      throw new ScimFilterError('invalidFilter', `expected an attribute, found ${describe(token)}`);
    }
    const name = normalizeAttribute(token.v);
    if (this.peek().t === '[') {
      if (prefix !== undefined) {
        throw new ScimFilterError('invalidFilter', 'a value filter may not hold another');
      }
      this.next();
      const inner = this.orExpr(depth + 1, name);
      this.expect(']');
      return inner;
    }
    const attr = this.resolve(prefix === undefined ? name : `${prefix}.${name}`);
    if (++this.clauses > MAX_CLAUSES) {
      throw new ScimFilterError('invalidFilter', `a filter may hold at most ${MAX_CLAUSES} comparisons`);
    }
    const opToken = this.next();
    const op = opToken.t === 'word' ? opToken.v.toLowerCase() : '';
    if (op === 'pr') {
      return { kind: 'pr', attr };
    }
    if (!COMPARE_OPS.has(op)) {
      throw new ScimFilterError(
        'invalidFilter',
        `expected an operator (eq, ne, co, sw, ew, gt, ge, lt, le, pr), found ${describe(opToken)}`,
      );
    }
    const valueToken = this.next();
    let value: string | number | boolean | null;
    if (valueToken.t === 'string' || valueToken.t === 'number') {
      value = valueToken.v;
    } else if (valueToken.t === 'word' && ['true', 'false', 'null'].includes(valueToken.v.toLowerCase())) {
      const word = valueToken.v.toLowerCase();
      value = word === 'null' ? null : word === 'true';
    } else {
      throw new ScimFilterError('invalidFilter', `expected a value ("text", a number, true, false or null), found ${describe(valueToken)}`);
    }
    return { kind: 'cmp', attr, op: op as Extract<ScimFilter, { kind: 'cmp' }>['op'], value };
  }

  private resolve(attr: string): string {
    if (!this.known.has(attr)) {
      throw new ScimFilterError('invalidFilter', `svc cannot filter on ${attr}`);
    }
    return attr;
  }
}

function describe(token: Token): string {
  switch (token.t) {
    case 'end':
      return 'the end of the filter';
    case 'word':
    case 'number':
      return JSON.stringify(String(token.v).slice(0, 40));
    case 'string':
      return 'a string';
    default:
      return JSON.stringify(token.t);
  }
}

/** A PATCH path: an attribute (`active`, `name.givenName`, `urn:...:employeeNumber`), optionally with a value filter and a sub-attribute. */
export type PatchPath = { attr: string; filter?: ScimFilter; sub?: string };

/**
 * Parses a PATCH operation's path (RFC 7644 section 3.5.2): `attr`, `attr.sub`,
 * `attr[filter]` or `attr[filter].sub`. The filter's attributes are the multi-valued attribute's
 * sub-attributes (`value`, `type`, ...), checked by the caller. Throws invalidPath.
 */
export function parsePatchPath(text: string, subAttributes: ReadonlySet<string>): PatchPath {
  if (text.length > 512) {
    throw new ScimFilterError('invalidPath', 'a path may be at most 512 characters');
  }
  const bracket = text.indexOf('[');
  if (bracket < 0) {
    if (!/^[A-Za-z0-9_$:.-]+$/.test(text)) {
      throw new ScimFilterError('invalidPath', `${JSON.stringify(text.slice(0, 60))} is not a path`);
    }
    return { attr: normalizeAttribute(text) };
  }
  const close = text.lastIndexOf(']');
  if (close < bracket) {
    throw new ScimFilterError('invalidPath', 'a value filter is not closed');
  }
  const attr = normalizeAttribute(text.slice(0, bracket));
  const rest = text.slice(close + 1);
  if (rest !== '' && !/^\.[A-Za-z0-9_$]+$/.test(rest)) {
    throw new ScimFilterError('invalidPath', `${JSON.stringify(text.slice(0, 60))} is not a path`);
  }
  let filter: ScimFilter;
  try {
    filter = parseFilter(text.slice(bracket + 1, close), subAttributes);
  } catch (error) {
    if (error instanceof ScimFilterError) {
      throw new ScimFilterError('invalidPath', error.message);
    }
    throw error;
  }
  return { attr, filter, ...(rest ? { sub: rest.slice(1).toLowerCase() } : {}) };
}

import { AppError } from '@svc/contracts/errors';
import { newId } from '@svc/contracts/ids';
import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from './pagination.ts';

const SCOPE = 'users:ten_00000000000000000000';
const forge = (parts: unknown) => Buffer.from(JSON.stringify(parts)).toString('base64url');

function refusal(raw: string): AppError | undefined {
  try {
    decodeCursor(SCOPE, raw);
  } catch (error) {
    return error as AppError;
  }
  return undefined;
}

describe('decodeCursor', () => {
  it('gives back what encodeCursor wrote', () => {
    const last = { createdAt: new Date('2026-03-01T12:34:56.789Z'), id: newId('user') };
    expect(decodeCursor(SCOPE, encodeCursor(SCOPE, last))).toEqual(last);
    expect(decodeCursor(SCOPE, undefined)).toBeUndefined();
  });

  // Each of these reached PostgreSQL as a bound parameter it refuses (22008 date/time field out
  // of range, 22021 NUL in text), answering 500.
  const id = newId('user');
  const tampered: [string, string][] = [
    ['year 0', forge([SCOPE, '0000-01-01T00:00:00.000Z', id])],
    ['an extended year past PostgreSQL', forge([SCOPE, '+275760-09-13T00:00:00.000Z', id])],
    ['a negative extended year', forge([SCOPE, '-271821-04-20T00:00:00.000Z', id])],
    ['a date that does not round-trip', forge([SCOPE, '2026-02-31T00:00:00.000Z', id])],
    ['a bare number Date.parse accepts', forge([SCOPE, '99999', id])],
    ['a date with text after it', forge([SCOPE, '2026-01-01T00:00:00.000Z\u0000', id])],
    ['a NUL in the id', forge([SCOPE, '2026-01-01T00:00:00.000Z', 'usr_\u0000'])],
    ['an id of another shape', forge([SCOPE, '2026-01-01T00:00:00.000Z', 'x'.repeat(10_000)])],
    ['an id with an unknown prefix', forge([SCOPE, '2026-01-01T00:00:00.000Z', 'zzz_00000000000000000000'])],
    ['an unpaired surrogate in the id', forge([SCOPE, '2026-01-01T00:00:00.000Z', 'usr_\ud800'])],
    ['a number for the id', forge([SCOPE, '2026-01-01T00:00:00.000Z', 1])],
    ['four parts', forge([SCOPE, '2026-01-01T00:00:00.000Z', id, id])],
    ['an object', forge({ scope: SCOPE })],
    ['not base64 JSON', '%%%'],
    ['another list', forge(['roles:ten_00000000000000000000', '2026-01-01T00:00:00.000Z', id])],
  ];
  it.each(tampered)('refuses a cursor with %s as 400 validation_failed', (_name, raw) => {
    const error = refusal(raw);
    expect(error).toBeInstanceOf(AppError);
    expect(error?.code).toBe('validation_failed');
  });
});

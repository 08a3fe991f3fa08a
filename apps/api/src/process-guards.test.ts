import { describe, expect, it } from 'vitest';
import { isLostConnection } from './process-guards.ts';

describe('isLostConnection', () => {
  it("knows postgres.js's, the socket's and PostgreSQL's shutdown codes", () => {
    for (const code of ['CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'ECONNREFUSED', 'ECONNRESET', '57P01', '57P03']) {
      expect(isLostConnection(Object.assign(new Error('x'), { code })), code).toBe(true);
    }
  });

  it('does not swallow anything else: a bug, a query error, a non-error', () => {
    expect(isLostConnection(new TypeError('undefined is not a function'))).toBe(false);
    expect(isLostConnection(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false);
    expect(isLostConnection(undefined)).toBe(false);
    expect(isLostConnection('ECONNRESET')).toBe(false);
  });
});

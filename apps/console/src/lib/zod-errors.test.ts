import { ZCreateApiKeyBody } from '@svc/contracts/api-keys';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { humanMessage } from './zod-errors.ts';

/**
 * The console's error map (installed once in its main.tsx) turns the contracts' schema issues into
 * the copy an admin reads under a field. Passed per parse here, so no global zod setting leaks
 * into other tests.
 */
describe('console error map', () => {
  const messages = (schema: z.ZodType, input: unknown) =>
    Object.fromEntries((schema.safeParse(input, { error: humanMessage }).error?.issues ?? []).map((i) => [i.path.join('.'), i.message]));

  it('says what to do with the API-key form, with the same schema the api uses', () => {
    expect(messages(ZCreateApiKeyBody, { name: '   ', scopes: [] })).toEqual({
      name: 'Enter a name.',
      // The contract's own message outranks the map (zod's order): it is written for both.
      scopes: 'Choose at least one scope.',
    });
  });

  it('covers lengths, required fields, lists, URLs and emails', () => {
    const schema = z.object({
      slug: z.string().min(3).max(8),
      displayName: z.string(),
      eventTypes: z.array(z.string()).min(1),
      url: z.url(),
      email: z.email(),
      kind: z.enum(['a', 'b']),
    });
    expect(messages(schema, { slug: 'ab', eventTypes: [], url: 'nope', email: 'x', kind: 'c' })).toEqual({
      slug: 'Use at least 3 characters.',
      displayName: 'Enter a display name.',
      eventTypes: 'Choose at least one event type.',
      url: 'Enter a valid https URL.',
      email: 'Enter a valid email address.',
      kind: 'Choose one of the options.',
    });
    expect(messages(schema, { slug: 'much-too-long' }).slug).toBe('Use at most 8 characters.');
  });

  it("leaves zod's message where it has no words of its own", () => {
    expect(messages(z.object({ n: z.number() }), { n: 'seven' }).n).toMatch(/expected number/);
  });
});

import { describe, expect, it } from 'vitest';
import { formatValue, summaryLines, targetNameOf } from './audit-summary.ts';

describe('an audit summary as lines a person reads', () => {
  it('one line per field, values as text rather than JSON', () => {
    expect(
      summaryLines({ name: 'Usage ingest', scopes: ['usage.write', 'usage.read'], expiresAt: null, enabled: false, count: 3, tags: [] }),
    ).toEqual([
      { key: 'name', value: 'Usage ingest' },
      { key: 'scopes', value: 'usage.write, usage.read' },
      { key: 'expiresAt', value: 'none' },
      { key: 'enabled', value: 'no' },
      { key: 'count', value: '3' },
      { key: 'tags', value: 'none' },
    ]);
  });

  it('spreads changes into a line per field: before and after where both were kept, else the new value', () => {
    expect(
      summaryLines({
        changes: {
          name: { from: 'Acme', to: 'Acme Inc' },
          slug: undefined,
          roleKey: 'org_admin',
          permissions: { added: ['a.b'], removed: ['c.d'] },
        },
        previous: { permissions: ['x.y'] },
      }),
    ).toEqual([
      { key: 'name', value: 'Acme → Acme Inc' },
      { key: 'roleKey', value: '→ org_admin' },
      { key: 'permissions', value: 'added a.b; removed c.d' },
      { key: 'previous', value: 'permissions: x.y' },
    ]);
  });

  it('reads the before of a field from `previous` and from `{ before, after }`', () => {
    expect(
      summaryLines({
        changes: {
          status: 'disabled',
          permissions: ['a.b'],
          seats: { before: 10, after: 25 },
          planKey: { before: 'free', after: 'growth' },
        },
        previous: { status: 'active', permissions: ['x.y', 'a.b'] },
      }),
    ).toEqual([
      { key: 'status', value: 'active → disabled' },
      { key: 'permissions', value: 'x.y, a.b → a.b' },
      { key: 'seats', value: '10 → 25' },
      { key: 'planKey', value: 'free → growth' },
    ]);
  });

  it('keeps deeper values whole, as compact JSON', () => {
    expect(formatValue({ jwks: { keys: 1 } })).toBe('jwks: {"keys":1}');
    expect(formatValue([{ kid: 'a' }, 'b'])).toBe('{"kid":"a"}, b');
  });

  it('names the target from what the entry recorded', () => {
    expect(targetNameOf({ name: 'Customer Portal', slug: 'customer-portal' })).toBe('Customer Portal');
    expect(targetNameOf({ email: 'ada@acme.test', roleKey: 'org_member' })).toBe('ada@acme.test');
    expect(targetNameOf({ host: 'hooks.example.com' })).toBe('hooks.example.com');
    expect(targetNameOf({ changes: { name: { from: 'A', to: 'B' } } })).toBe('B');
    expect(targetNameOf({ changes: { name: 'Renamed' } })).toBe('Renamed');
    expect(targetNameOf({ count: 2 })).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { chipsThatFit } from './chips-fit.ts';

describe('chips that fit on one line', () => {
  it('shows every chip when they all fit, gaps included', () => {
    expect(chipsThatFit([40, 40, 40], 128, 4, 50)).toBe(3);
    expect(chipsThatFit([], 10, 4, 50)).toBe(0);
  });

  it('keeps room for "+N more" once one does not fit', () => {
    // 40 + 4 + 40 + 4 + 40 = 128 > 127: two chips and the more chip need 50 + 4 + 40 + 4 + 40 = 138.
    expect(chipsThatFit([40, 40, 40], 127, 4, 50)).toBe(1);
    expect(chipsThatFit([40, 40, 40, 40], 150, 4, 50)).toBe(2);
  });

  it('shows at least one chip however narrow the cell', () => {
    expect(chipsThatFit([300, 40], 120, 4, 50)).toBe(1);
  });
});

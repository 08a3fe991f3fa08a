/**
 * How many chips of `widths` (in order, pixels) fit on one line of `room` pixels with `gap`
 * between them. When not all fit, room is kept for the "+N more" chip (`moreWidth`), and at least
 * one chip is shown (cut with an ellipsis if it must be): a cell never shows only "+N more".
 */
export function chipsThatFit(widths: readonly number[], room: number, gap: number, moreWidth: number): number {
  const all = widths.reduce((sum, w) => sum + w, 0) + gap * Math.max(0, widths.length - 1);
  if (all <= room) {
    return widths.length;
  }
  let used = moreWidth;
  let count = 0;
  for (const width of widths) {
    if (used + gap + width > room) {
      break;
    }
    used += gap + width;
    count++;
  }
  return Math.max(1, count);
}

/** Seconds left in the current one-minute rate-limit window (windows align to the minute). */
export function secondsLeftInWindow(): number {
  return 60 - ((Date.now() / 1000) % 60);
}

/** Waits for the next window when fewer than `needSeconds` remain, so a test never straddles two. */
export async function roomInWindow(needSeconds: number): Promise<void> {
  const left = secondsLeftInWindow();
  if (left < needSeconds) {
    await new Promise((r) => setTimeout(r, left * 1000 + 250));
  }
}

/** A fenced Markdown block whose fence is longer than any backtick run inside, so the body survives as written. */
export function block(language: string, body: string): string[] {
  const longest = Math.max(0, ...(body.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return [`${fence}${language}`, body.replace(/\n$/, ''), fence];
}

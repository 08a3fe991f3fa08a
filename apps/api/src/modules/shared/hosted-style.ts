import { readFileSync } from 'node:fs';

/**
 * The design tokens (apps/console/src/tokens.css, the one list the console imports too), then
 * hosted.css beside this file: read once at startup from the sources, so hosted pages never wait
 * on the console's build, without comments and runs of white space. The `<style>` of every hosted
 * page (hosted-page.ts hostedPage).
 */
export const HOSTED_TOKENS_URL = new URL('../../../../console/src/tokens.css', import.meta.url);

const minify = (css: string) =>
  css
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\s+/g, ' ')
    .trim();

export const HOSTED_STYLE = minify(
  `${readFileSync(HOSTED_TOKENS_URL, 'utf8')}\n${readFileSync(new URL('./hosted.css', import.meta.url), 'utf8')}`,
);

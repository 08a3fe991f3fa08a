import { readFileSync } from 'node:fs';

/**
 * hosted.css beside this file, read once at startup, without its comments and runs of white
 * space: the `<style>` of every hosted page (modules/auth/pages.ts hostedPage). Its own file so
 * its tokens can be compared with the console's and copied over as they change.
 */
export const HOSTED_STYLE = readFileSync(new URL('./hosted.css', import.meta.url), 'utf8')
  .replace(/\/\*[\s\S]*?\*\//g, '')
  .replace(/\s+/g, ' ')
  .trim();

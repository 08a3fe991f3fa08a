import { describe, expect, it } from 'vitest';
import { sanitizeReturnTo } from './return-to.ts';

const opts = {
  publicUrl: 'https://svc.example.com',
  allowlist: ['https://app.example.com/after-sign-in', 'http://localhost:3000/callback'],
  fallback: '/auth/console',
};

describe('sanitizeReturnTo', () => {
  it.each([
    ['/auth/console/users?page=2#top', '/auth/console/users?page=2#top'],
    ['/user', '/user'],
    ['https://svc.example.com/user', '/user'],
    ['https://app.example.com/after-sign-in', 'https://app.example.com/after-sign-in'],
    ['http://localhost:3000/callback', 'http://localhost:3000/callback'],
  ])('keeps %s', (input, expected) => {
    expect(sanitizeReturnTo(input, opts)).toBe(expected);
  });

  it.each([
    ['scheme-relative', '//evil.example'],
    ['backslash', '/\\evil.example'],
    ['backslash twice', '\\\\evil.example'],
    ['scheme without slashes', 'https:evil.example'],
    ['scheme without slashes, path', 'https:/evil.example'],
    ['userinfo', 'https://user@evil.example'],
    ['our host as userinfo', 'https://svc.example.com@evil.example'],
    ['userinfo on an allowlisted host', 'https://x:y@app.example.com/after-sign-in'],
    ['percent-encoded slashes', '/%2F%2Fevil.example'],
    ['percent-encoded backslash', '/%5Cevil.example'],
    ['tab', '/\tevil.example'],
    ['newline in scheme', 'java\nscript:alert(1)'],
    ['encoded newline', '/%0a%0dLocation:%20https://evil.example'],
    ['javascript', 'javascript:alert(1)'],
    ['data', 'data:text/html,<script>alert(1)</script>'],
    ['not allowlisted', 'https://evil.example/after-sign-in'],
    ['allowlisted host, other path', 'https://app.example.com/other'],
    ['allowlisted URL with extra query', 'https://app.example.com/after-sign-in?x=1'],
    ['lookalike host', 'https://app.example.com.evil.example/after-sign-in'],
    ['other port', 'https://svc.example.com:8443/user'],
    ['broken escape', '/%E0%A4%A'],
    ['empty', ''],
    ['too long', `/${'a'.repeat(3000)}`],
    ['not a string', ['/user']],
  ])('refuses %s', (_name, input) => {
    expect(sanitizeReturnTo(input, opts)).toBe('/auth/console');
  });
});

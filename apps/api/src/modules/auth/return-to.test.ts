import { describe, expect, it } from 'vitest';
import { isSafeLocation, sanitizeReturnTo } from './return-to.ts';

const opts = {
  publicUrl: 'https://svc.example.com',
  allowlist: ['https://app.example.com/after-sign-in', 'http://localhost:3000/callback'],
  fallback: '/auth/console',
};

describe('sanitizeReturnTo', () => {
  it.each([
    ['/auth/console/users?page=2#top', '/auth/console/users?page=2#top'],
    ['/user', '/user'],
    // The OpenID Provider's hosted interaction: the sign-in hand-off returns to it.
    ['/oidc/interaction/YZ-k5-3FRCY9E464CnaDbimrBPMZWSnvgL7zaMmgVRq', '/oidc/interaction/YZ-k5-3FRCY9E464CnaDbimrBPMZWSnvgL7zaMmgVRq'],
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
    // Paths that only become `//evil` once parsed (dot segments, encoded dots and slashes).
    ['dot segment before a double slash', '/.//evil.example/x'],
    ['parent segment before a double slash', '/..//evil.example'],
    ['encoded dot, encoded slash', '/%2e/%2fevil.example'],
    ['encoded parent segment', '/%2e%2e//evil.example'],
    ['half-encoded parent segment', '/.%2e//evil.example'],
    ['dot then encoded parent segment', '/./%2e%2e//evil.example'],
    ['climbing above the root', '/a/../..//evil.example'],
    ['our own origin, double slash', 'https://svc.example.com//evil.example'],
    ['our own origin, dot segment', 'https://svc.example.com/.//evil.example'],
    ['double-encoded slashes', '/%252F%252Fevil.example'],
    ['encoded tab', '/%09/evil.example'],
    ['fullwidth slashes', '\uff0f\uff0fevil.example'],
    ['CR LF', '/\r\nLocation: https://evil.example'],
  ])('refuses %s', (_name, input) => {
    expect(sanitizeReturnTo(input, opts)).toBe('/auth/console');
  });

  it('keeps a fullwidth slash inside a path as an encoded path character, on svc', () => {
    expect(sanitizeReturnTo('/\uff0fevil.example', opts)).toBe('/%EF%BC%8Fevil.example');
  });
});

describe('isSafeLocation: the rule on the string that goes into the Location header', () => {
  it.each(['/user', '/auth/console/users?page=2#top', '/a%252F%252Fb', '/search?q=100%25', 'https://app.example.com/after-sign-in'])(
    'accepts %s',
    (location) => {
      expect(isSafeLocation(location, opts)).toBe(true);
    },
  );

  it.each([
    '//evil.example',
    '/\\evil.example',
    '/./evil',
    '/a/../b',
    '/%2F%2Fevil.example',
    '/%252F%252Fevil.example',
    '/%5Cevil.example',
    'https:evil.example',
    'https://evil.example/',
    'https://app.example.com/after-sign-in/',
    'HTTPS://app.example.com/after-sign-in',
    'https://x@app.example.com/after-sign-in',
    '/user#\u00e9',
    '/user with space',
    'user',
    '',
  ])('refuses %s', (location) => {
    expect(isSafeLocation(location, opts)).toBe(false);
  });
});

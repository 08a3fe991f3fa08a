import { describe, expect, it } from 'vitest';
import { startupLines } from './startup-lines.ts';

describe('what svc serve prints once it listens', () => {
  it('in development: the address, each demo person as email / password, and the keyless quickstart, as plain lines', () => {
    const lines = startupLines({
      url: 'http://127.0.0.1:7150',
      development: true,
      demoUsers: [
        { email: 'admin@svc.local', password: 'admin-password', groups: ['platform-admins'] },
        { email: 'user@svc.local', password: 'user-password', groups: [] },
      ],
      keylessEnabled: true,
    });
    expect(lines).toEqual([
      'svc listening on http://127.0.0.1:7150 (console http://127.0.0.1:7150/auth/console, API docs http://127.0.0.1:7150/docs)',
      'sign in at http://127.0.0.1:7150/signin (development engine) as:',
      '  admin@svc.local / admin-password  (platform-admins)',
      '  user@svc.local / user-password',
      "keyless quickstart, no account or key: curl 'http://127.0.0.1:7150/v1/setup/agent-context?keyless=1&framework=express&format=markdown'",
    ]);
  });

  it('with a real engine and keyless off (production): the address only, no credentials', () => {
    const lines = startupLines({ url: 'https://id.example.com', development: false, demoUsers: [], keylessEnabled: false });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^svc listening on https:\/\/id\.example\.com /);
  });

  it('outside development (tests read the output) the address only, even with the development engine and keyless on', () => {
    const demo = [{ email: 'user@svc.local', password: 'user-password', groups: [] }];
    expect(startupLines({ url: 'http://127.0.0.1:7150', development: false, demoUsers: demo, keylessEnabled: true })).toHaveLength(1);
  });
});

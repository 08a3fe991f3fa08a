import Provider from 'oidc-provider';
import { describe, expect, it } from 'vitest';
import { promiseHooksOn } from '../../../../../test/support/promise-hooks.ts';
import { providerContext, providerRequestsInFlight } from './request-context.ts';

function gate(): { open: () => void; opened: Promise<void> } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

/** One provider request as oidc-provider runs it: our middleware around its `als.run(ctx, next)`. */
function providerRequest(store: string, until: Promise<void>, fail = false) {
  let seen: unknown;
  const done = providerRequestsInFlight({}, () =>
    providerContext.run(store, async () => {
      await until;
      seen = Provider.ctx;
      if (fail) {
        throw new Error('the route failed');
      }
    }),
  );
  return { done, seen: () => seen };
}

describe('oidc-provider request context: on while a provider request runs, off after the last', () => {
  it('is the storage Provider.ctx reads', () => {
    const marker = { request: 'marker' };
    expect(providerContext.run(marker, () => Provider.ctx)).toBe(marker);
  });

  it('overlapping requests keep their own context until the last ends; then promise hooks are off', async () => {
    const first = gate();
    const second = gate();
    const a = providerRequest('a', first.opened);
    const b = providerRequest('b', second.opened);
    expect(await promiseHooksOn()).toBe(true);

    first.open();
    await a.done;
    expect(a.seen()).toBe('a');
    // b is still under way: its context must survive a's end.
    expect(await promiseHooksOn()).toBe(true);

    second.open();
    await b.done;
    expect(b.seen()).toBe('b');
    expect(await promiseHooksOn()).toBe(false);
    expect(Provider.ctx).toBeUndefined();
  });

  it('a request that fails is counted out too, and the next request has its context again', async () => {
    const failing = gate();
    const a = providerRequest('a', failing.opened, true);
    failing.open();
    await expect(a.done).rejects.toThrow('the route failed');
    expect(await promiseHooksOn()).toBe(false);

    const again = gate();
    const b = providerRequest('b', again.opened);
    again.open();
    await b.done;
    expect(b.seen()).toBe('b');
    expect(await promiseHooksOn()).toBe(false);
  });
});

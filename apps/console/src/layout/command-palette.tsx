import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Command } from 'cmdk';
import { useEffect, useState } from 'react';
import { useNavigate } from 'react-router';
import { Dialog } from '../components/dialog.tsx';
import { useOpenOrganization } from '../lib/organization.ts';
import { useTRPC } from '../trpc.ts';
import { visibleNavItems } from './nav-items.ts';

/** How many organizations a platform admin's search shows, and applications the palette offers. */
const SEARCH_LIMIT = 10;
const APPLICATION_LIMIT = 50;

/** True for Ctrl+K (Cmd+K on a Mac): the palette's shortcut, anywhere in the console. */
function isPaletteShortcut(event: KeyboardEvent): boolean {
  return event.key.toLowerCase() === 'k' && (event.ctrlKey || event.metaKey) && !event.altKey && !event.shiftKey;
}

/**
 * The header's "Go to…" button and the palette it opens (also with Ctrl+K / Cmd+K): pages the user
 * may see, their organizations (any organization, searched, for a platform admin) and the active
 * organization's applications. Arrow keys move, Enter goes, Escape closes.
 */
export function CommandPalette() {
  const [open, setOpen] = useState(false);
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (isPaletteShortcut(event)) {
        event.preventDefault();
        setOpen((was) => !was);
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
  return (
    <>
      <button
        type="button"
        className="button palette__trigger"
        onClick={() => setOpen(true)}
        aria-keyshortcuts="Control+K Meta+K"
        data-testid="palette-open"
      >
        Go to… <kbd className="palette__kbd">Ctrl K</kbd>
      </button>
      <Dialog open={open} onOpenChange={setOpen} title="Go to" testId="palette">
        {open && <PaletteBody close={() => setOpen(false)} />}
      </Dialog>
    </>
  );
}

function PaletteBody({ close }: { close: () => void }) {
  const trpc = useTRPC();
  const navigate = useNavigate();
  const openOrganization = useOpenOrganization();
  const [search, setSearch] = useState('');
  const me = useQuery(trpc.me.get.queryOptions());
  const isPlatformAdmin = me.data?.isPlatformAdmin ?? false;
  const active = me.data?.activeWorkspace ?? null;
  const q = search.trim();
  const tenants = useQuery({
    ...trpc.tenants.list.queryOptions({ q, limit: SEARCH_LIMIT }, { enabled: isPlatformAdmin && q.length > 0 }),
    placeholderData: keepPreviousData,
  });
  const applications = useQuery(
    trpc.applications.list.queryOptions(
      { organization_slug: active?.slug, limit: APPLICATION_LIMIT },
      { enabled: active !== null && active.kind === 'tenant' },
    ),
  );

  // The user's organizations, then (platform admins) the search's others, each once.
  const organizations = new Map<string, { slug: string; name: string }>();
  for (const membership of me.data?.memberships ?? []) {
    organizations.set(membership.organization.slug, membership.organization);
  }
  if (isPlatformAdmin && q.length > 0) {
    for (const tenant of tenants.data?.data ?? []) {
      organizations.set(tenant.slug, tenant);
    }
  }
  const go = (path: string) => {
    close();
    void navigate(path);
  };

  return (
    <Command label="Go to a page, organization or application" className="palette" loop>
      <Command.Input
        value={search}
        onValueChange={setSearch}
        placeholder={isPlatformAdmin ? 'Pages, organizations, applications…' : 'Pages, your organizations, applications…'}
        className="palette__input"
        data-testid="palette-input"
      />
      <Command.List className="palette__list" data-testid="palette-list">
        <Command.Empty className="palette__empty">Nothing matches “{q}”.</Command.Empty>
        <Command.Group heading="Pages" className="palette__group">
          {visibleNavItems(isPlatformAdmin).map((item) => (
            <Command.Item
              key={item.id}
              value={`page ${item.label}`}
              keywords={[item.id]}
              onSelect={() => go(item.path)}
              className="palette__item"
              data-testid={`palette-page-${item.id}`}
            >
              {item.label}
            </Command.Item>
          ))}
        </Command.Group>
        {organizations.size > 0 && (
          <Command.Group heading="Organizations" className="palette__group">
            {[...organizations.values()].map((organization) => (
              <Command.Item
                key={organization.slug}
                value={`organization ${organization.name} ${organization.slug}`}
                onSelect={() => {
                  close();
                  void openOrganization(organization.slug);
                }}
                className="palette__item"
                data-testid="palette-organization"
                data-slug={organization.slug}
              >
                {organization.name}
                <span className="palette__hint">{organization.slug}</span>
              </Command.Item>
            ))}
          </Command.Group>
        )}
        {(applications.data?.data.length ?? 0) > 0 && (
          <Command.Group heading={`Applications of ${active?.name ?? 'this organization'}`} className="palette__group">
            {applications.data?.data.map((application) => (
              <Command.Item
                key={application.id}
                value={`application ${application.name} ${application.id}`}
                onSelect={() => go(`/applications/${application.id}`)}
                className="palette__item"
                data-testid="palette-application"
              >
                {application.name}
              </Command.Item>
            ))}
          </Command.Group>
        )}
      </Command.List>
    </Command>
  );
}

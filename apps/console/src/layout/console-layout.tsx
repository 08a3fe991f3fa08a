import { useQuery } from '@tanstack/react-query';
import { Suspense, useState } from 'react';
import { Link, NavLink, Outlet, useNavigation } from 'react-router';
import { Skeleton } from '../components/skeleton.tsx';
import { useTRPC } from '../trpc.ts';
import { CommandPalette } from './command-palette.tsx';
import { type NavItem, navGroups, visibleNavItems } from './nav-items.ts';
import { PendingMemberships } from './pending-memberships.tsx';
import { SessionBar } from './session-bar.tsx';

/** Header, left navigation and the routed page. Route errors render inside <Outlet> (app.tsx). */
export function ConsoleLayout() {
  const navigation = useNavigation();
  const trpc = useTRPC();
  // The same me.get query as the session bar (one request); until it answers, no platform items.
  const me = useQuery(trpc.me.get.queryOptions());
  // A phone's navigation: a menu opened from the
  // header, closed again by picking a page or pressing Escape. Wider screens always show it.
  const [menuOpen, setMenuOpen] = useState(false);
  const closeMenu = () => setMenuOpen(false);
  return (
    <div className="shell" data-testid="console-shell">
      {/* The first Tab stop: past the header and the twenty links of the navigation to the page. */}
      <a className="skip-link" href="#content" data-testid="skip-link">
        Skip to content
      </a>
      <header className="shell__header">
        <Link className="brand" to="/">
          <span className="brand__mark" aria-hidden="true">
            s
          </span>
          <span className="brand__name">svc console</span>
        </Link>
        <button
          type="button"
          className="button nav-toggle"
          aria-expanded={menuOpen}
          aria-controls="console-nav"
          onClick={() => setMenuOpen((open) => !open)}
          data-testid="nav-toggle"
        >
          {menuOpen ? 'Close menu' : 'Menu'}
        </button>
        <div className="shell__header-links">
          <CommandPalette />
          <a className="header-docs" href="/docs">
            API docs
          </a>
          <SessionBar />
        </div>
      </header>
      <nav
        id="console-nav"
        className={menuOpen ? 'shell__nav shell__nav--open' : 'shell__nav'}
        aria-label="Console"
        data-testid="nav"
        onKeyDown={(event) => {
          if (event.key === 'Escape') {
            closeMenu();
          }
        }}
      >
        <ul>
          {navGroups(visibleNavItems(me.data?.isPlatformAdmin ?? false)).flatMap((group) =>
            group.section === null ? (
              group.items.map((item) => <NavEntry key={item.id} item={item} onPick={closeMenu} />)
            ) : (
              <li key={group.section} className="nav-section" data-testid={`nav-section-${group.section.toLowerCase()}`}>
                <span className="nav-section__title" id={`nav-section-${group.section.toLowerCase()}`}>
                  {group.section}
                </span>
                <ul aria-labelledby={`nav-section-${group.section.toLowerCase()}`}>
                  {group.items.map((item) => (
                    <NavEntry key={item.id} item={item} onPick={closeMenu} />
                  ))}
                </ul>
              </li>
            ),
          )}
          {/* The header has no room for it on a phone. */}
          <li className="nav-phone-only">
            <a className="nav-link" href="/docs" data-testid="nav-docs">
              API docs
            </a>
          </li>
        </ul>
      </nav>
      <main id="content" tabIndex={-1} className="shell__main" aria-busy={navigation.state === 'loading'}>
        <PendingMemberships />
        {/* A page's chunk is loading (app.tsx `page`): the shell stays, the page area shows bars. */}
        <Suspense fallback={<Skeleton label="Loading the page…" heading lines={6} testId="page-loading" />}>
          <Outlet />
        </Suspense>
      </main>
    </div>
  );
}

/** One link of the left navigation; a page under its path (a detail) keeps it current. */
function NavEntry({ item, onPick }: { item: NavItem; onPick: () => void }) {
  return (
    <li>
      <NavLink
        to={item.path}
        onClick={onPick}
        end={item.path === '/'}
        className={({ isActive }) => (isActive ? 'nav-link nav-link--active' : 'nav-link')}
        data-testid={`nav-${item.id}`}
      >
        {item.label}
      </NavLink>
    </li>
  );
}

import { NavLink } from 'react-router';

/** The People page's two views, each at its own URL (/people/members, /people/invitations/<id>). */
export const PEOPLE_TABS = [
  { id: 'members', label: 'Members', path: '/people/members' },
  { id: 'invitations', label: 'Invitations', path: '/people/invitations' },
] as const;

export type PeopleTab = (typeof PEOPLE_TABS)[number]['id'];

/**
 * The tabs under the People heading: links, so each view has its URL and back returns to it; the
 * current one is `aria-current="page"` (an invitation's page keeps Invitations current).
 */
export function PeopleTabs() {
  return (
    <nav className="tabs" aria-label="People" data-testid="people-tabs">
      {PEOPLE_TABS.map((tab) => (
        <NavLink
          key={tab.id}
          to={tab.path}
          className={({ isActive }) => (isActive ? 'tabs__tab tabs__tab--active' : 'tabs__tab')}
          data-testid={`people-tab-${tab.id}`}
        >
          {tab.label}
        </NavLink>
      ))}
    </nav>
  );
}

import { InvitationsPage } from '../invitations/invitations-page.tsx';
import { MembersPage } from '../members/members-page.tsx';
import type { PeopleTab } from './people-tabs.tsx';

/**
 * People: who belongs to the organization (Members) and who is invited (Invitations), one page
 * with a tab each, at /people/members and /people/invitations (an invitation's own page at
 * /people/invitations/<id>). The old /members and /invitations addresses redirect here (app.tsx).
 */
export function PeoplePage({ tab }: { tab: PeopleTab }) {
  return <div data-testid="page-people">{tab === 'members' ? <MembersPage /> : <InvitationsPage />}</div>;
}

"""Teams on the fakes, for the teams rules' unit tests: ``World`` (the stores, the team store and the policies)
and the people it registers."""

from __future__ import annotations

from dataclasses import dataclass

from memmy_kb.domain.sharing.limits import ShareLimits
from memmy_kb.domain.sharing.shares import SharePolicy
from memmy_kb.domain.teams import invitations
from memmy_kb.domain.teams.limits import TeamLimits, TeamPolicy
from memmy_kb.records import MembershipRecord
from tests.support.domain import register
from tests.support.factories import profile_record
from tests.support.fakes import FakeStores, FakeTeamStore

BOB_PHONE = "+8613900139000"
CAROL_EMAIL = "carol@example.com"


@dataclass
class World:
    stores: FakeStores
    teams: FakeTeamStore
    policy: TeamPolicy
    share_policy: SharePolicy

    def with_limits(self, **limits: int) -> None:
        self.policy = TeamPolicy(self.stores.counters, TeamLimits(**limits), 180)

    def invite(self, team_id: str, identifier: str, by: str = "alice") -> MembershipRecord:
        invitation, _ = invitations.invite(self.teams, self.stores.profiles, by, team_id, identifier, policy=self.policy)
        return invitation

    def join(self, team_id: str, user: str, by: str = "alice") -> None:
        self.invite(team_id, user, by)
        invitations.accept(self.teams, self.stores.profiles, user, team_id, policy=self.policy)

    def membership(self, user: str, team_id: str) -> MembershipRecord | None:
        return self.teams.get_membership(user, team_id)


def new_world(stores: FakeStores) -> World:
    """alice, bob (a phone), carol (an email) and dave registered, the default limits."""
    register(stores, profile_record("alice", display_name="Alice"))
    register(stores, profile_record("bob", display_name="Bob", phone=BOB_PHONE))
    register(stores, profile_record("carol", display_name="Carol", email=CAROL_EMAIL))
    register(stores, profile_record("dave", display_name="Dave"))
    policy = TeamPolicy(stores.counters, TeamLimits(), 180)
    return World(stores, FakeTeamStore(stores.table), policy, SharePolicy(stores.counters, ShareLimits(), 180))

"""``make load``'s team actions (docs/teams.md), mixed into ``bench.load_worker.Worker``: create a team,
invite another load user, accept or decline one's invitation, share an own KB with a team one is a member
of, unshare it, remove a member, leave, delete the team.

Each action records a ``TeamEvent`` for the oracle (``bench.load_oracle_teams``) when it succeeded or its
outcome is unknown, and updates the model's beliefs (``TeamInfo``) on a success only; a belief overtaken
by another user's action costs a refusal the route may give (``TEAM_EXPECTED``), nothing else.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import httpx

from bench import load_oracle as oracle
from bench.load_model import Budget, Kb, Model, TeamInfo, User
from bench.load_oracle_teams import TeamAction, TeamEvent

MAX_OWNED_TEAMS = 2  # teams one user owns at most at a time in this workload
ACCEPT_SHARE = 0.75  # of the answers to an invitation, the accepts

TEAM_WEIGHTS = {
    "team_create": 2,
    "team_invite": 6,
    "team_answer": 6,
    "team_share": 5,
    "team_unshare": 2,
    "team_remove": 2,
    "team_leave": 2,
    "team_delete": 1,
}
# A 404 is a team deleted, a membership or invitation removed, or a KB deleted meanwhile; a 409 an
# invitation or share another request made first.
TEAM_EXPECTED = {
    "POST /teams": {201},
    "POST /teams/{team}/members": {201, 404, 409},
    "POST /teams/{team}/accept": {200, 404},
    "POST /teams/{team}/decline": {204, 404},
    "DELETE /teams/{team}/members/{user}": {204, 404},
    "DELETE /teams/{team}": {204, 404},
    "POST /knowledge-bases/{kb}/teams": {201, 404, 409},
    "DELETE /knowledge-bases/{kb}/teams/{team}": {204, 404},
}


class TeamActions:
    """The team actions of one load user; ``Worker`` supplies the attributes and ``call``."""

    user: User
    others: list[User]
    model: Model
    rng: random.Random
    call: Callable[..., tuple[httpx.Response | None, oracle.Outcome]]
    _pick_owned: Callable[..., Kb | None]

    def _event(
        self, action: TeamAction, team: str, outcome: oracle.Outcome, user: str = "", kb: str = ""
    ) -> None:
        """Record a team action for the oracle (the caller holds the model's lock)."""
        if outcome.ok is not False:
            self.model.team_events.append(TeamEvent(action, team, outcome, user, kb))

    def _teams(self, condition: Callable[[TeamInfo], bool]) -> list[TeamInfo]:
        with self.model.lock:
            return [team for team in self.model.live_teams() if condition(team)]

    def do_team_create(self, budget: Budget) -> bool:
        me = self.user.user_id
        if len(self._teams(lambda t: t.owner == me)) >= MAX_OWNED_TEAMS or not budget.take():
            return False
        response, outcome = self.call(
            "POST /teams", "POST", "/teams", json={"name": f"team of {self.user.name}"}
        )
        with self.model.lock:
            if response is not None and response.status_code == 201:
                team_id = str(response.json()["id"])
                self.model.teams[team_id] = TeamInfo(team_id, me, states={me: "member"})
                self._event("create", team_id, outcome, user=me)
            elif outcome.ok is None:
                self.model.uncertain_team_creates.add(me)
        return True

    def do_team_invite(self, budget: Budget) -> bool:
        me = self.user.user_id
        pairs = [
            (team, other)
            for team in self._teams(lambda t: t.owner == me)
            for other in self.others
            if other.user_id not in team.states
        ]
        if not pairs:  # no team of one's own (or everyone in it): make one, when one may
            return self.do_team_create(budget)
        if not budget.take():
            return False
        team, other = self.rng.choice(pairs)
        _, outcome = self.call(
            "POST /teams/{team}/members",
            "POST",
            f"/teams/{team.team_id}/members",
            json={"identifier": other.user_id},
        )
        with self.model.lock:
            if outcome.ok:
                team.states[other.user_id] = "invited"
            self._event("invite", team.team_id, outcome, user=other.user_id)
        return True

    def do_team_answer(self, budget: Budget) -> bool:
        me = self.user.user_id
        invited = self._teams(lambda t: t.states.get(me) == "invited")
        if not invited or not budget.take():
            return False
        team = self.rng.choice(invited)
        accept = self.rng.random() < ACCEPT_SHARE
        verb = "accept" if accept else "decline"
        _, outcome = self.call(
            f"POST /teams/{{team}}/{verb}", "POST", f"/teams/{team.team_id}/{verb}", json={}
        )
        with self.model.lock:
            if outcome.ok and accept:
                team.states[me] = "member"
            elif outcome.ok:
                team.states.pop(me, None)
            self._event("accept" if accept else "decline", team.team_id, outcome, user=me)
        return True

    def do_team_share(self, budget: Budget) -> bool:
        me = self.user.user_id
        with self.model.lock:
            owned = self.model.owned(me)
        pairs = [
            (kb, team)
            for team in self._teams(lambda t: t.states.get(me) == "member")
            for kb in owned
            if kb.kb_id not in team.kbs
        ]
        if not pairs or not budget.take():
            return False
        kb, team = self.rng.choice(pairs)
        _, outcome = self.call(
            "POST /knowledge-bases/{kb}/teams",
            "POST",
            f"/knowledge-bases/{kb.kb_id}/teams",
            json={"team_id": team.team_id},
        )
        with self.model.lock:
            if outcome.ok:
                team.kbs.add(kb.kb_id)
            self._event("share", team.team_id, outcome, kb=kb.kb_id)
        return True

    def do_team_unshare(self, budget: Budget) -> bool:
        me = self.user.user_id
        with self.model.lock:
            owned = {kb.kb_id: kb for kb in self.model.owned(me)}
        pairs = [
            (kb_id, team)
            for team in self._teams(lambda t: bool(t.kbs))
            for kb_id in team.kbs
            if kb_id in owned
        ]
        if not pairs or not budget.take():
            return False
        kb_id, team = self.rng.choice(pairs)
        _, outcome = self.call(
            "DELETE /knowledge-bases/{kb}/teams/{team}",
            "DELETE",
            f"/knowledge-bases/{kb_id}/teams/{team.team_id}",
        )
        with self.model.lock:
            if outcome.ok:
                team.kbs.discard(kb_id)
            self._event("unshare", team.team_id, outcome, kb=kb_id)
        return True

    def do_team_remove(self, budget: Budget) -> bool:
        me = self.user.user_id
        pairs = [
            (team, user)
            for team in self._teams(lambda t: t.owner == me)
            for user in team.states
            if user != me
        ]
        if not pairs or not budget.take():
            return False
        team, user = self.rng.choice(pairs)
        self._remove_member(team, user, "remove")
        return True

    def do_team_leave(self, budget: Budget) -> bool:
        me = self.user.user_id
        teams = self._teams(lambda t: t.owner != me and t.states.get(me) == "member")
        if not teams or not budget.take():
            return False
        self._remove_member(self.rng.choice(teams), me, "leave")
        return True

    def _remove_member(self, team: TeamInfo, user: str, action: TeamAction) -> None:
        _, outcome = self.call(
            "DELETE /teams/{team}/members/{user}", "DELETE", f"/teams/{team.team_id}/members/{user}"
        )
        with self.model.lock:
            if outcome.ok:
                team.states.pop(user, None)
            self._event(action, team.team_id, outcome, user=user)

    def do_team_delete(self, budget: Budget) -> bool:
        me = self.user.user_id
        owned = self._teams(lambda t: t.owner == me)
        if not owned or not budget.take():
            return False
        team = self.rng.choice(owned)
        _, outcome = self.call("DELETE /teams/{team}", "DELETE", f"/teams/{team.team_id}")
        with self.model.lock:
            if outcome.ok is not False:
                team.deleted = True if outcome.ok else None
            self._event("delete", team.team_id, outcome)
        return True

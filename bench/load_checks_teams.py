"""``make load`` after the run, teams: the memberships and team shares the model is sure of against the
server's (``GET /teams`` of each user, ``GET /teams/{id}`` of each live team, ``GET
/knowledge-bases/{kb}/teams`` of each live KB). A membership or share an unknown outcome or an overlap
leaves undetermined (``bench.load_oracle_teams.state_after``) is left out on both sides."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Literal

import httpx

from bench import load_oracle as oracle
from bench.load_model import Model, TeamInfo, User
from bench.load_oracle_teams import TeamEvent, state_after

MEMBERSHIP_STATE: dict[str, str | None] = {
    "create": "member",
    "invite": "invited",
    "accept": "member",
    "decline": None,
    "remove": None,
    "leave": None,
    "delete": None,
}

Known = str | None | Literal[False]  # a state, absent (None), or undetermined (False)


def _get(http: httpx.Client, path: str) -> Any:
    response = http.get(path)
    response.raise_for_status()
    return response.json()


def membership(events: Sequence[TeamEvent], user: str) -> Known:
    """What the server must hold of ``user``'s membership of the events' team."""
    steps = [
        (e.outcome, MEMBERSHIP_STATE[e.action])
        for e in events
        if e.action == "delete" or (e.user == user and e.action in MEMBERSHIP_STATE)
    ]
    return state_after(steps)


def team_share(events: Sequence[TeamEvent], kb: str) -> Known:
    """Whether the server must list ``kb`` as shared with the events' team ("shared"), or not (None)."""
    steps: list[tuple[oracle.Outcome, str | None]] = [
        (e.outcome, "shared" if e.action == "share" else None)
        for e in events
        if e.action == "delete" or (e.kb == kb and e.action in ("share", "unshare"))
    ]
    return state_after(steps)


def check_teams(clients: dict[str, httpx.Client], users: list[User], model: Model) -> list[oracle.Violation]:
    """Every user's team list, every live team's members and KBs, every live KB's teams, against the model."""
    events: dict[str, list[TeamEvent]] = defaultdict(list)
    for event in model.team_events:
        events[event.team].append(event)
    violations: list[oracle.Violation] = []
    for user in users:
        violations += _check_team_list(clients[user.user_id], user.user_id, model, events)
    for team in model.teams.values():
        if team.deleted is False:
            violations += _check_team(clients[team.owner], team, users, model, events[team.team_id])
    for kb_id, kb in model.kbs.items():
        if kb.deleted is False:
            violations += _check_kb_teams(clients[kb.owner], kb_id, model, events)
    return violations


def _expected_members(
    team: TeamInfo, users: list[User], events: Sequence[TeamEvent]
) -> tuple[set[Any], set[str]]:
    """(user, state, role) the model is sure of, and the users it is not sure of."""
    sure: set[tuple[str, str, str]] = set()
    unsure: set[str] = set()
    for user in users:
        state = membership(events, user.user_id)
        if state is False:
            unsure.add(user.user_id)
        elif state is not None:
            sure.add((user.user_id, state, "owner" if user.user_id == team.owner else "member"))
    return sure, unsure


def _check_team_list(
    http: httpx.Client, me: str, model: Model, events: dict[str, list[TeamEvent]]
) -> list[oracle.Violation]:
    listed = {(t["id"], t["state"], t["role"]) for t in _get(http, "/teams")["items"]}
    expected: set[tuple[str, str, str]] = set()
    skip: set[str] = set()
    for team in model.teams.values():
        state = membership(events[team.team_id], me)
        if state is False or team.deleted is None:
            skip.add(team.team_id)
        elif state is not None:
            expected.add((team.team_id, state, "owner" if me == team.owner else "member"))
    if me in model.uncertain_team_creates:  # a team of ours whose creation had no answer may exist
        skip |= {team_id for team_id, _, _ in listed if team_id not in model.teams}
    model.final_counts["team memberships"] += len(expected)
    return oracle.compare_sets(
        "team-membership",
        f"{me}'s teams (team, state, role)",
        expected,
        {t for t in listed if t[0] not in skip},
    )


def _check_team(
    owner: httpx.Client, team: TeamInfo, users: list[User], model: Model, events: Sequence[TeamEvent]
) -> list[oracle.Violation]:
    detail = _get(owner, f"/teams/{team.team_id}")
    expected, unsure = _expected_members(team, users, events)
    members = {(m["user_id"], m["state"], m["role"]) for m in detail["members"] if m["user_id"] not in unsure}
    violations = oracle.compare_sets("team-member", f"members of {team.team_id}", expected, members)
    kbs: set[str] = set()
    unsure_kbs: set[str] = set()
    for kb_id in {e.kb for e in events if e.kb}:
        kb = model.kbs.get(kb_id)
        shared = team_share(events, kb_id)
        if shared is False or kb is None or kb.deleted is None:
            unsure_kbs.add(kb_id)
        elif shared and kb.deleted is False:
            kbs.add(kb_id)
    listed = {k["id"] for k in detail["knowledge_bases"]} - unsure_kbs
    model.final_counts["team shares"] += len(kbs)
    model.final_counts["live teams"] += 1
    return violations + oracle.compare_sets("team-share", f"KBs of {team.team_id}", kbs, listed)


def _check_kb_teams(
    owner: httpx.Client, kb_id: str, model: Model, events: dict[str, list[TeamEvent]]
) -> list[oracle.Violation]:
    listed = {t["team_id"] for t in _get(owner, f"/knowledge-bases/{kb_id}/teams")["items"]}
    expected: set[str] = set()
    unsure: set[str] = set()
    for team in model.teams.values():
        shared = team_share(events[team.team_id], kb_id)
        if shared is False or team.deleted is None:
            unsure.add(team.team_id)
        elif shared and team.deleted is False:
            expected.add(team.team_id)
    return oracle.compare_sets("kb-team", f"teams of {kb_id}", expected, listed - unsure)

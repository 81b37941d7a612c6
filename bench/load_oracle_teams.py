"""The team half of ``make load``'s oracle (``bench.load_oracle``): pure functions, no I/O.

A team action is recorded as a ``TeamEvent`` (what, the team, the user or KB it names, its interval and
outcome) when it succeeded or its outcome is unknown; a refused one changed nothing. ``team_changes``
turns them into the ``Change``\\ s of the (user, KB) pairs they affect, on the way ``team:<id>``, so the
scope rule applies unchanged. Conservative as that rule asks: an ``off`` only from a success, and true of
the way it names whatever else happened (after a removal the user reads nothing through the team, after
an unshare nobody reads that KB through it); an ``on`` for every pair it could have given, with an
unknown outcome as landing at any later time:

- a join (the team's creation for its owner, an accept) is ``on`` for each KB shared with the team that
  was not definitely unshared before the join started;
- a share is ``on`` for each member who could be one then: a join that started before the share ended
  and was not definitely undone (removed, left, team deleted) before the share started;
- an unshare is ``off`` for every member the team ever had, on that KB;
- a removal or a leave is ``off`` for that user on every KB ever shared with the team (over-approximate:
  an overlap may leave which ones it listed unknown; the way's ``off`` is true for all of them);
- a team deletion is ``off`` for every member on every KB.

After the run, ``state_after`` gives what the server must hold of one (user, team) membership or one
(KB, team) share from the successes, or None when an unknown outcome or an overlap leaves it undetermined.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from bench.load_oracle import Change, Outcome

TeamAction = Literal["create", "invite", "accept", "decline", "share", "unshare", "remove", "leave", "delete"]
JOINS = ("create", "accept")
GONE = ("remove", "leave", "delete")


@dataclass(frozen=True)
class TeamEvent:
    """A team action that succeeded or may have (``outcome.ok`` True or None)."""

    action: TeamAction
    team: str
    outcome: Outcome
    user: str = ""  # the member it names: the owner (create), invitee, who accepts, who is removed or leaves
    kb: str = ""  # share, unshare


def via_team(team: str) -> str:
    return f"team:{team}"


def _end(event: TeamEvent) -> float:
    """When the event's effect had landed at the latest: never known for an unknown outcome."""
    return event.outcome.end if event.outcome.ok else math.inf


def _undone_before(done: TeamEvent, undoers: Iterable[TeamEvent], moment: float) -> bool:
    """Whether a success that started after ``done`` had landed (its membership or its share) ended
    before ``moment``: what ``done`` made is then definitely gone."""
    return any(u.outcome.ok and u.outcome.start > _end(done) and u.outcome.end < moment for u in undoers)


def team_changes(events: Iterable[TeamEvent]) -> list[Change]:
    """The (user, KB) changes the team events make, for ``bench.load_oracle.check_scope``."""
    by_team: dict[str, list[TeamEvent]] = defaultdict(list)
    for event in events:
        by_team[event.team].append(event)
    changes: list[Change] = []
    for team, team_events in by_team.items():
        changes += _one_team(team, team_events)
    return changes


def _one_team(team: str, events: Sequence[TeamEvent]) -> list[Change]:
    via = via_team(team)
    joins = [e for e in events if e.action in JOINS]
    shares = [e for e in events if e.action == "share"]
    deletions = [e for e in events if e.action == "delete"]
    members = sorted({e.user for e in joins})
    kbs = sorted({e.kb for e in shares})
    changes: list[Change] = []

    def on(user: str, kb: str, event: TeamEvent, what: str) -> None:
        suffix = "" if event.outcome.ok else "?"
        changes.append(Change(user, kb, "on", event.outcome.start, _end(event), what + suffix, via))

    def off(user: str, kb: str, event: TeamEvent, what: str) -> None:
        if event.outcome.ok:
            changes.append(Change(user, kb, "off", event.outcome.start, event.outcome.end, what, via))

    for join in joins:
        for share in shares:
            unshares = [e for e in events if e.action == "unshare" and e.kb == share.kb]
            if share.outcome.start < _end(join) and not _undone_before(share, unshares, join.outcome.start):
                on(join.user, share.kb, join, "team-join")
    for share in shares:
        for join in joins:
            gone = [e for e in events if e.action in ("remove", "leave") and e.user == join.user]
            if join.outcome.start < _end(share) and not _undone_before(
                join, [*gone, *deletions], share.outcome.start
            ):
                on(join.user, share.kb, share, "team-share")
    for event in events:
        if event.action == "unshare":
            for user in members:
                off(user, event.kb, event, "team-unshare")
        elif event.action in ("remove", "leave"):
            for kb in kbs:
                off(event.user, kb, event, f"team-{event.action}")
        elif event.action == "delete":
            for user in members:
                for kb in kbs:
                    off(user, kb, event, "team-delete")
    return changes


def state_after(steps: Sequence[tuple[Outcome, str | None]]) -> str | Literal[False] | None:
    """The state the last success left, or False when it cannot be known.

    ``steps`` are the successful or unknown-outcome actions on one thing (a membership: ``"invited"``,
    ``"member"``, None for gone; a KB's share with a team: ``"shared"`` or None), each with the state it
    leaves; the thing starts absent (None). Unknown when any outcome is unknown or two successes overlap
    (their order is then unseen).
    """
    if any(outcome.ok is None for outcome, _ in steps):
        return False
    ordered = sorted(steps, key=lambda s: s[0].start)
    for (first, _), (second, _) in itertools.pairwise(ordered):
        if second.start < first.end:
            return False
    return ordered[-1][1] if ordered else None

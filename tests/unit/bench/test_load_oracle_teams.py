"""The team half of ``make load``'s oracle (bench/load_oracle_teams.py, and the ways of reading in
bench/load_oracle.py): a team action becomes (user, KB) changes, a leak through a team fails the run, and
a change in flight or a second way of reading the KB is never held against the service."""

from __future__ import annotations

import math

from bench.load_checks_teams import membership, team_share
from bench.load_oracle import ALL_PATHS, ANY_USER, Change, Outcome, Recall, check_scope
from bench.load_oracle_teams import TeamAction, TeamEvent, state_after, team_changes, via_team

KB, OTHER_KB = "kb_a", "kb_b"
MARKER = "kbm0123456789ab"
MARKERS = {MARKER: KB}
OWNER, MEMBER = "owner", "member"
TEAM = "tm_1"


def ev(
    action: TeamAction, start: float, end: float, *, user: str = "", kb: str = "", ok: bool | None = True
) -> TeamEvent:
    return TeamEvent(action, TEAM, Outcome(start, end, ok), user, kb)


def kb_created() -> Change:
    return Change(OWNER, KB, "on", 0, 0.5, "create")


def team_with_member(joined: tuple[float, float] = (3, 4)) -> list[TeamEvent]:
    """The owner creates the team, shares KB with it, and MEMBER joins."""
    return [
        ev("create", 1, 1.5, user=OWNER),
        ev("share", 2, 2.5, kb=KB),
        ev("invite", 2.6, 2.8, user=MEMBER),
        ev("accept", *joined, user=MEMBER),
    ]


def violations(direct: list[Change], events: list[TeamEvent], start: float, end: float) -> list[str]:
    changes = [kb_created(), *direct, *team_changes(events)]
    recall = Recall(MEMBER, start, end, (MARKER,), excerpts=1)
    return [v.kind for v in check_scope(changes, [recall], MARKERS).violations]


# ------------------------------------------------------------------------------------ the changes


def test_a_member_reads_the_teams_kb_after_joining_and_not_before():
    assert violations([], team_with_member(), 5, 6) == []
    assert violations([], team_with_member(), 2.9, 2.95) == ["scope"]  # invited only: the share gave nothing


def test_a_join_in_flight_or_of_unknown_outcome_is_not_held_against_the_service():
    assert violations([], team_with_member(joined=(3, 10)), 5, 6) == []
    events = [*team_with_member()[:-1], ev("accept", 3, 4, user=MEMBER, ok=None)]
    assert violations([], events, 50, 51) == []


def test_a_share_gives_a_member_who_joined_before_it():
    events = [
        ev("create", 1, 1.5, user=OWNER),
        ev("invite", 1.6, 1.8, user=MEMBER),
        ev("accept", 2, 2.5, user=MEMBER),
        ev("share", 3, 4, kb=KB),
    ]
    assert violations([], events, 3.5, 6) == []
    assert violations([], events, 2.6, 2.9) == ["scope"]


def test_a_removal_a_leave_and_a_team_deletion_each_end_the_members_reading():
    for gone in (ev("remove", 7, 8, user=MEMBER), ev("leave", 7, 8, user=MEMBER), ev("delete", 7, 8)):
        events = [*team_with_member(), gone]
        assert violations([], events, 9, 10) == ["scope"], gone.action
        assert violations([], events, 7.5, 10) == [], gone.action  # in flight when the recall started


def test_a_removal_of_unknown_outcome_excludes_nothing():
    events = [*team_with_member(), ev("remove", 7, 8, user=MEMBER, ok=None)]
    assert violations([], events, 9, 10) == []


def test_an_unshare_ends_every_members_reading_unless_a_new_share_may_have_landed():
    unshared = [*team_with_member(), ev("unshare", 7, 8, kb=KB)]
    assert violations([], unshared, 9, 10) == ["scope"]
    assert violations([], [*unshared, ev("share", 8.5, 9.5, kb=KB)], 9, 10) == []
    assert violations([], [*unshared, ev("share", 8.5, 9.5, kb=KB, ok=None)], 20, 21) == []


def test_a_share_after_a_members_removal_does_not_give_the_kb_back():
    events = [*team_with_member(), ev("remove", 7, 8, user=MEMBER), ev("share", 9, 9.5, kb=OTHER_KB)]
    changes = team_changes(events)
    assert not [c for c in changes if c.effect == "on" and c.kb == OTHER_KB and c.user == MEMBER]
    # ...while the owner, still a member, gets it
    assert [c for c in changes if c.effect == "on" and c.kb == OTHER_KB and c.user == OWNER]


def test_a_removal_is_off_for_every_kb_ever_shared_with_the_team():
    events = [*team_with_member(), ev("share", 5, 6, kb=OTHER_KB), ev("remove", 7, 8, user=MEMBER)]
    offs = {(c.user, c.kb, c.what, c.via) for c in team_changes(events) if c.effect == "off"}
    assert offs == {
        (MEMBER, KB, "team-remove", via_team(TEAM)),
        (MEMBER, OTHER_KB, "team-remove", via_team(TEAM)),
    }


def test_a_team_deletion_is_off_for_every_member_on_every_kb():
    events = [*team_with_member(), ev("share", 5, 6, kb=OTHER_KB), ev("delete", 7, 8)]
    offs = {(c.user, c.kb) for c in team_changes(events) if c.effect == "off"}
    assert offs == {(u, k) for u in (OWNER, MEMBER) for k in (KB, OTHER_KB)}


# ------------------------------------------------------------------------------ ways of reading


def test_a_direct_revoke_does_not_end_a_reading_through_a_team():
    direct = [Change(MEMBER, KB, "on", 0.6, 0.8, "share"), Change(MEMBER, KB, "off", 5, 6, "revoke")]
    assert violations(direct, team_with_member(), 7, 8) == []
    # ...and once the team's way is gone too, the KB is out of scope
    assert violations(direct, [*team_with_member(), ev("leave", 6.5, 6.8, user=MEMBER)], 7, 8) == ["scope"]


def test_a_team_removal_does_not_end_a_direct_reading():
    direct = [Change(MEMBER, KB, "on", 0.6, 0.8, "share")]
    assert violations(direct, [*team_with_member(), ev("remove", 7, 8, user=MEMBER)], 9, 10) == []


def test_a_toggle_off_ends_every_way_and_a_toggle_on_may_give_any_back():
    off = Change(MEMBER, KB, "off", 5, 6, "toggle-off", ALL_PATHS)
    assert violations([off], team_with_member(), 7, 8) == ["scope"]
    on = Change(MEMBER, KB, "on", 6.5, 6.8, "toggle-on", ALL_PATHS)
    assert violations([off, on], team_with_member(), 7, 8) == []


def test_a_kb_deletion_ends_every_way_whatever_overlapped_it():
    deletion = Change(ANY_USER, KB, "off", 5, 6, "delete-kb")
    events = [*team_with_member(), ev("share", 5.5, math.inf, kb=KB, ok=None)]
    assert violations([deletion], events, 7, 8) == ["scope"]


# ----------------------------------------------------------------------------------- after the run


def test_state_after_is_the_last_success_and_undetermined_on_doubt():
    assert state_after([]) is None
    assert state_after([(Outcome(0, 1, True), "invited"), (Outcome(2, 3, True), "member")]) == "member"
    assert state_after([(Outcome(0, 1, True), "invited"), (Outcome(2, 3, None), "member")]) is False
    assert state_after([(Outcome(0, 2, True), "invited"), (Outcome(1, 3, True), None)]) is False


def test_membership_and_team_share_read_the_teams_events():
    events = team_with_member()
    assert membership(events, MEMBER) == "member"
    assert membership(events, OWNER) == "member"
    assert membership([*events, ev("decline", 9, 10, user=OWNER)], MEMBER) == "member"
    assert membership([*events, ev("delete", 9, 10)], MEMBER) is None
    assert membership([*events, ev("remove", 3.5, 5, user=MEMBER)], MEMBER) is False  # overlapping the accept
    assert team_share(events, KB) == "shared"
    assert team_share([*events, ev("unshare", 7, 8, kb=KB)], KB) is None
    assert team_share([*events, ev("unshare", 7, 8, kb=OTHER_KB)], KB) == "shared"

"""Sharing a KB with a team through the real handlers (docs/teams.md): who may share and unshare, each
refusal, what a member then sees, and a KB's deletion taking it off its teams."""

from __future__ import annotations

from http import HTTPStatus

import pytest

from memmy_kb.composition import reset_composition
from tests.support.sharing import register, share
from tests.support.teams import delete_team, make_team, remove_member, share_with_team, unshare_from_team
from tests.support.uploads import create_kb

TEAM = "tm_sales"


@pytest.fixture
def people(service):
    """alice owns the team; bob a member, erin an admin, dave invited; carol in no team."""
    for user, name in (("alice", "Alice"), ("bob", "Bob"), ("carol", "Carol"), ("dave", "Dave"), ("erin", "Erin")):
        register(service, user, name)
    make_team(service, TEAM, "alice", "bob", admins=("erin",), invited=("dave",))
    return service


def error(reply) -> tuple[int, str]:
    return reply.status, reply.body["error"]["code"]


def team_of(service, team_id=TEAM):
    return service.stores.kbs.batch_get_teams([team_id]).get(team_id)


def test_the_owner_shares_and_every_member_reads_the_kb_read_only(people):
    kb_id = create_kb(people)
    reply = share_with_team(people, kb_id, TEAM)
    assert reply.status == HTTPStatus.CREATED, reply.body
    assert (reply.body["team_id"], reply.body["name"], reply.body["shared_by"]) == (
        TEAM,
        f"团队 {TEAM}",
        {"user_id": "alice", "display_name": "Alice"},
    )
    team = team_of(people)
    assert (set(team.kbs), team.kb_count, team.version, team.kbs[kb_id].owner_id) == ({kb_id}, 1, 1, "alice")
    assert people.stores.kbs.get_kb(kb_id).teams == {TEAM}
    listed = people.call("GET", "/knowledge-bases", "bob").body["items"]
    assert [(k["id"], k["role"], k["recall"], k["teams"]) for k in listed] == [
        (kb_id, "reader", True, [{"id": TEAM, "name": f"团队 {TEAM}"}])
    ]
    assert people.call("GET", f"/knowledge-bases/{kb_id}", "bob").body["role"] == "reader"
    assert people.call("GET", f"/knowledge-bases/{kb_id}/files", "bob").status == HTTPStatus.OK
    # Reader rights only: everything owner-only stays the owner's.
    assert error(people.call("PATCH", f"/knowledge-bases/{kb_id}", "bob", body={"name": "改名"})) == (
        HTTPStatus.FORBIDDEN,
        "owner_only",
    )
    assert error(share(people, kb_id, "carol", user="bob"))[0] == HTTPStatus.FORBIDDEN
    assert people.call("GET", f"/knowledge-bases/{kb_id}/members", "bob").status == HTTPStatus.FORBIDDEN
    # The owner's list of the KB's teams; the owner's own list shows no team (the KB is theirs).
    shares = people.call("GET", f"/knowledge-bases/{kb_id}/teams", "alice").body["items"]
    assert [(s["team_id"], s["shared_by"]["display_name"]) for s in shares] == [(TEAM, "Alice")]
    assert people.call("GET", "/knowledge-bases", "alice").body["items"][0]["teams"] == []
    assert people.call("GET", f"/knowledge-bases/{kb_id}/teams", "bob").status == HTTPStatus.FORBIDDEN
    activity = people.call("GET", f"/knowledge-bases/{kb_id}/activity", "alice").body["items"]
    assert [(a["kind"], a["subject"]) for a in activity][:1] == [("team_shared", TEAM)]


def test_invited_people_and_strangers_see_exactly_a_missing_kb(people):
    kb_id = create_kb(people)
    share_with_team(people, kb_id, TEAM)
    missing = people.call("GET", "/knowledge-bases/kb_nope", "carol")
    for user in ("dave", "carol"):
        reply = people.call("GET", f"/knowledge-bases/{kb_id}", user)
        assert (reply.status, reply.body) == (missing.status, missing.body)
        assert people.call("GET", "/knowledge-bases", user).body == {"items": []}
        assert error(people.call("PUT", f"/knowledge-bases/{kb_id}/recall", user, body={"enabled": False})) == (
            HTTPStatus.NOT_FOUND,
            "kb_not_found",
        )


def test_share_refusals(people):
    kb_id = create_kb(people)
    bobs = create_kb(people, "bob", "鲍勃的")
    carols = create_kb(people, "carol", "卡萝的")
    daves = create_kb(people, "dave", "戴夫的")
    # Not the KB's owner: 403 for a reader, the 404 of a missing KB for anyone else.
    share(people, kb_id, "bob")
    assert error(share_with_team(people, kb_id, TEAM, user="bob")) == (HTTPStatus.FORBIDDEN, "owner_only")
    assert error(share_with_team(people, kb_id, TEAM, user="carol"))[0] == HTTPStatus.NOT_FOUND
    # Not a member of the team (a stranger, or only invited), or no such team: the same 404.
    stranger = share_with_team(people, carols, TEAM, user="carol")
    assert error(stranger) == (HTTPStatus.NOT_FOUND, "team_not_found")
    assert share_with_team(people, daves, TEAM, user="dave").body == stranger.body
    assert share_with_team(people, kb_id, "tm_nope").body == stranger.body
    # A member of any role shares their own KB; twice is 409.
    assert share_with_team(people, bobs, TEAM, user="bob").status == HTTPStatus.CREATED
    assert error(share_with_team(people, bobs, TEAM, user="bob")) == (HTTPStatus.CONFLICT, "already_shared")
    assert people.call("POST", f"/knowledge-bases/{kb_id}/teams", "alice", body={}).status == (
        HTTPStatus.UNPROCESSABLE_ENTITY
    )


def test_the_limits_on_both_sides(people, monkeypatch):
    monkeypatch.setenv("TEAM_MAX_KBS", "1")
    reset_composition()
    first, second = create_kb(people), create_kb(people, name="第二个")
    assert share_with_team(people, first, TEAM).status == HTTPStatus.CREATED
    assert error(share_with_team(people, second, TEAM)) == (HTTPStatus.CONFLICT, "team_kb_limit_reached")
    monkeypatch.setenv("TEAM_MAX_KBS", "50")
    monkeypatch.setenv("KB_MAX_TEAMS", "1")
    reset_composition()
    make_team(people, "tm_other", "alice")
    assert error(share_with_team(people, first, "tm_other")) == (HTTPStatus.CONFLICT, "kb_team_limit_reached")
    assert share_with_team(people, second, "tm_other").status == HTTPStatus.CREATED
    assert (team_of(people).kb_count, team_of(people, "tm_other").kb_count) == (1, 1)


def test_who_may_unshare(people):
    bobs = create_kb(people, "bob", "鲍勃的")
    assert share_with_team(people, bobs, TEAM, user="bob").status == HTTPStatus.CREATED
    make_team(people, "tm_other", "carol", "bob")
    assert share_with_team(people, bobs, "tm_other", user="bob").status == HTTPStatus.CREATED
    # A member who does not own the KB: 403; invited or a stranger: 404.
    remove = "/knowledge-bases/{}/teams/{}"
    assert error(unshare_from_team(people, bobs, TEAM, user="dave"))[1] == "team_not_found"
    assert error(unshare_from_team(people, bobs, TEAM, user="carol"))[1] == "team_not_found"
    # The team's owner and an admin may; so may the KB's owner, even after leaving the team.
    assert unshare_from_team(people, bobs, TEAM, user="erin").status == HTTPStatus.NO_CONTENT
    # Unshared already: the KB's owner is told so; an admin, to whom the KB is nothing, gets the missing KB.
    assert error(unshare_from_team(people, bobs, TEAM, user="erin")) == (HTTPStatus.NOT_FOUND, "kb_not_found")
    assert error(unshare_from_team(people, bobs, TEAM, user="bob")) == (HTTPStatus.NOT_FOUND, "team_share_not_found")
    remove_member(people, "bob", "tm_other")
    assert people.call("DELETE", remove.format(bobs, "tm_other"), "bob").status == HTTPStatus.NO_CONTENT
    assert people.stores.kbs.get_kb(bobs).teams == frozenset()
    assert (team_of(people).kbs, team_of(people).kb_count, team_of(people).version) == ({}, 0, 2)
    kinds = [a["kind"] for a in people.call("GET", f"/knowledge-bases/{bobs}/activity", "bob").body["items"]]
    assert kinds.count("team_unshared") == 2


def test_a_member_who_does_not_own_the_kb_may_not_unshare_it(people):
    kb_id = create_kb(people)
    share_with_team(people, kb_id, TEAM)
    assert error(unshare_from_team(people, kb_id, TEAM, user="bob")) == (HTTPStatus.FORBIDDEN, "team_admin_only")
    assert set(team_of(people).kbs) == {kb_id}


def test_recall_toggle_of_a_team_kb_is_the_members_own(people):
    kb_id = create_kb(people)
    share_with_team(people, kb_id, TEAM)
    reply = people.call("PUT", f"/knowledge-bases/{kb_id}/recall", "bob", body={"enabled": False})
    assert (reply.status, reply.body["recall"], reply.body["role"]) == (HTTPStatus.OK, False, "reader")
    assert people.call("GET", "/knowledge-bases", "bob").body["items"][0]["recall"] is False
    assert people.call("GET", "/knowledge-bases", "erin").body["items"][0]["recall"] is True


def test_deleting_the_kb_takes_it_off_every_team(people):
    kb_id = create_kb(people)
    make_team(people, "tm_other", "alice")
    share_with_team(people, kb_id, TEAM)
    share_with_team(people, kb_id, "tm_other")
    assert people.call("DELETE", f"/knowledge-bases/{kb_id}", "alice").status == HTTPStatus.ACCEPTED
    for team_id in (TEAM, "tm_other"):
        team = team_of(people, team_id)
        assert (team.kbs, team.kb_count, team.version) == ({}, 0, 2)
    assert people.call("GET", "/knowledge-bases", "bob").body == {"items": []}


def test_a_team_whose_meta_is_gone_gives_nothing(people):
    kb_id = create_kb(people)
    share_with_team(people, kb_id, TEAM)
    delete_team(people, TEAM)
    assert people.call("GET", f"/knowledge-bases/{kb_id}", "bob").status == HTTPStatus.NOT_FOUND
    assert people.call("GET", "/knowledge-bases", "bob").body == {"items": []}


def test_a_kb_owner_outside_a_team_learns_nothing_of_it_from_an_unshare(people):
    # carol is in no team: tm_sales exists, tm_none does not; her KB is shared with neither.
    carols = create_kb(people, "carol", "卡罗尔的")
    existing = error(unshare_from_team(people, carols, TEAM, user="carol"))
    missing = error(unshare_from_team(people, carols, "tm_none", user="carol"))
    assert existing == missing == (HTTPStatus.NOT_FOUND, "team_not_found")

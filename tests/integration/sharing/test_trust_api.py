"""Sharing you can trust through the real handlers: /me settings, blocks, owner.contact, the
share limits over HTTP (429 with Retry-After) and the activity log."""

from __future__ import annotations

import json
from http import HTTPStatus

import pytest

from memmy_kb.composition import reset_composition
from memmy_kb.domain.recall import fleet_budget
from tests.support.sharing import ALICE_PHONE, BOB_PHONE, register, share
from tests.support.uploads import create_kb


@pytest.fixture
def people(service):
    register(service, "alice", "Alice", phone=ALICE_PHONE)
    register(service, "bob", "Bob", phone=BOB_PHONE, email="bob@example.com")
    register(service, "carol", "Carol", email="carol@example.com")
    return service


def limits(monkeypatch, **env):
    for key, value in env.items():
        monkeypatch.setenv(key, str(value))
    reset_composition()


# -- /me ------------------------------------------------------------------------------------------


def test_me_reads_and_changes_the_recall_of_new_shares(people):
    assert people.call("GET", "/me", "bob").body["recall_new_shares"] is True
    first = create_kb(people)
    assert share(people, first, "bob").body["role"] == "reader"
    reply = people.call("PATCH", "/me", "bob", body={"recall_new_shares": False})
    assert (reply.status, reply.body["recall_new_shares"]) == (HTTPStatus.OK, False)
    assert people.call("GET", "/me", "bob").body == {
        "user_id": "bob",
        "display_name": "Bob",
        "email": "bob@example.com",
        "phone": BOB_PHONE,
        "recall_new_shares": False,
    }
    second = create_kb(people, name="新的")
    share(people, second, "bob")
    listed = {k["id"]: k["recall"] for k in people.call("GET", "/knowledge-bases", "bob").body["items"]}
    assert listed == {first: True, second: False}
    # A later PUT /me keeps the setting.
    register(people, "bob", "Bobby", phone=BOB_PHONE)
    assert people.call("GET", "/me", "bob").body["recall_new_shares"] is False


def test_me_before_registering_is_404_and_a_non_boolean_setting_is_422(people):
    assert people.call("GET", "/me", "nobody").body["error"]["code"] == "profile_not_found"
    reply = people.call("PATCH", "/me", "nobody", body={"recall_new_shares": False})
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.NOT_FOUND, "profile_not_found")
    reply = people.call("PATCH", "/me", "bob", body={"recall_new_shares": "false"})
    assert reply.status == HTTPStatus.UNPROCESSABLE_ENTITY


# -- blocks ---------------------------------------------------------------------------------------


def test_blocking_an_owner_removes_the_reader_and_their_later_shares_look_like_no_account(people):
    kb_id = create_kb(people)
    carols = create_kb(people, "carol", "卡萝的")
    assert share(people, kb_id, "bob").status == HTTPStatus.CREATED
    assert share(people, carols, "bob", user="carol").status == HTTPStatus.CREATED
    assert people.call("POST", "/me/blocked", "bob", body={"user_id": "alice"}).status == HTTPStatus.NO_CONTENT
    assert [k["id"] for k in people.call("GET", "/knowledge-bases", "bob").body["items"]] == [carols]
    assert people.call("GET", f"/knowledge-bases/{kb_id}", "bob").status == HTTPStatus.NOT_FOUND
    assert people.call("GET", "/me/blocked", "bob").body == {
        "items": [{"user_id": "alice", "display_name": "Alice"}]
    }
    nobody = share(people, kb_id, "+8613700137000")
    for identifier in ("bob", BOB_PHONE, "bob@example.com"):
        blocked = share(people, kb_id, identifier)
        assert (blocked.status, blocked.body) == (nobody.status, nobody.body)
    assert people.call("DELETE", "/me/blocked/alice", "bob").status == HTTPStatus.NO_CONTENT
    assert people.call("GET", "/me/blocked", "bob").body == {"items": []}
    assert share(people, kb_id, "bob").status == HTTPStatus.CREATED


def test_blocking_oneself_is_422_and_an_unknown_id_is_accepted(people):
    reply = people.call("POST", "/me/blocked", "bob", body={"user_id": "bob"})
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.UNPROCESSABLE_ENTITY, "cannot_block_self")
    assert people.call("POST", "/me/blocked", "bob", body={"user_id": "ghost"}).status == HTTPStatus.NO_CONTENT
    assert people.call("GET", "/me/blocked", "bob").body == {"items": [{"user_id": "ghost", "display_name": None}]}


def test_every_route_taking_a_user_id_answers_the_same_for_an_account_and_for_none(people):
    """No existence oracle: carol has an account, ghost has none. Sharing by a user id is the one route
    whose success names an account (bounded by the share attempts); an account that blocked the owner
    answers it as none. Everything else taking a user id answers identically, and the block list never
    shows a name the caller did not already know (bob never saw carol's)."""
    kb_id, bobs = create_kb(people), create_kb(people, "bob", "鲍勃的")
    people.call("POST", "/me/blocked", "carol", body={"user_id": "alice"})
    calls = [
        lambda who: share(people, kb_id, who),  # carol blocked alice: as no account
        lambda who: people.call("DELETE", f"/knowledge-bases/{kb_id}/members/{who}"),  # not a member
        lambda who: people.call("DELETE", f"/knowledge-bases/{bobs}/members/{who}"),  # alice: a stranger
        lambda who: people.call("POST", "/me/blocked", "bob", body={"user_id": who}),
        lambda who: people.call("DELETE", f"/me/blocked/{who}", "bob"),
        lambda who: people.call("POST", "/me/blocked", "bob", body={"user_id": who}),
    ]
    for call in calls:
        account, none = call("carol"), call("ghost")
        assert (account.status, json.dumps(account.body)) == (none.status, json.dumps(none.body))
        assert account.status < HTTPStatus.INTERNAL_SERVER_ERROR
    assert people.call("GET", "/me/blocked", "bob").body == {
        "items": [{"user_id": "carol", "display_name": None}, {"user_id": "ghost", "display_name": None}]
    }


def test_blocks_past_the_limit_are_429_with_retry_after_and_unblocking_frees_none(people, monkeypatch):
    limits(monkeypatch, SHARE_ATTEMPT_LIMIT=2)
    for who in ("carol", "ghost"):
        assert people.call("POST", "/me/blocked", "bob", body={"user_id": who}).status == HTTPStatus.NO_CONTENT
        assert people.call("DELETE", f"/me/blocked/{who}", "bob").status == HTTPStatus.NO_CONTENT
    reply = people.call("POST", "/me/blocked", "bob", body={"user_id": "dave"})
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.TOO_MANY_REQUESTS, "rate_limited")
    assert 0 < int(reply.headers["Retry-After"]) <= 2 * 3600
    assert "block attempts" in reply.body["error"]["message"]
    assert people.call("GET", "/me/blocked", "bob").body == {"items": []}
    # Blocking does not spend the share attempts, nor another user's blocks.
    assert share(people, create_kb(people, "bob", "鲍勃的"), "carol", user="bob").status == HTTPStatus.CREATED
    assert people.call("POST", "/me/blocked", "carol", body={"user_id": "dave"}).status == HTTPStatus.NO_CONTENT


# -- who shared this ------------------------------------------------------------------------------


def test_shared_with_me_shows_the_owners_masked_verified_contact(people):
    alices, carols = create_kb(people), create_kb(people, "carol", "卡萝的")
    share(people, alices, "bob")
    share(people, carols, "bob", user="carol")
    owners = {k["id"]: k["owner"] for k in people.call("GET", "/knowledge-bases", "bob").body["items"]}
    assert owners == {
        alices: {"user_id": "alice", "display_name": "Alice", "contact": "138****8000"},
        carols: {"user_id": "carol", "display_name": "Carol", "contact": "c***@example.com"},
    }
    assert ALICE_PHONE not in str(people.call("GET", "/knowledge-bases", "bob").body)


# -- limits ---------------------------------------------------------------------------------------


def test_share_attempts_past_the_limit_are_429_with_retry_after(people, monkeypatch):
    limits(monkeypatch, SHARE_ATTEMPT_LIMIT=3)
    kb_id = create_kb(people)
    assert share(people, kb_id, "nobody@example.com").status == HTTPStatus.NOT_FOUND
    assert share(people, kb_id, "+8613700137000").status == HTTPStatus.NOT_FOUND
    assert share(people, kb_id, "bob").status == HTTPStatus.CREATED
    reply = share(people, kb_id, "carol")
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.TOO_MANY_REQUESTS, "rate_limited")
    retry_after = int(reply.headers["Retry-After"])
    assert 0 < retry_after <= 2 * 3600
    assert reply.body["error"]["details"] == {"retry_after_seconds": retry_after}
    assert "at most 3" in reply.body["error"]["message"]
    # Another owner is not affected.
    carols = create_kb(people, "carol", "卡萝的")
    assert share(people, carols, "bob", user="carol").status == HTTPStatus.CREATED


def test_new_members_past_the_daily_limit_are_429_until_midnight(people, monkeypatch):
    limits(monkeypatch, NEW_MEMBERS_PER_DAY=1)
    kb_id = create_kb(people)
    assert share(people, kb_id, "bob").status == HTTPStatus.CREATED
    reply = share(people, kb_id, "carol")
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.TOO_MANY_REQUESTS, "rate_limited")
    assert 0 < int(reply.headers["Retry-After"]) <= 86400
    assert [m["user_id"] for m in people.call("GET", f"/knowledge-bases/{kb_id}/members").body["items"]] == [
        "alice",
        "bob",
    ]


def test_the_share_route_has_its_own_throttle_in_the_template(service):
    route_settings = service.template["Resources"]["HttpApi"]["Properties"]["RouteSettings"]
    share_route = route_settings["POST /knowledge-bases/{kb_id}/members"]
    default = service.template["Resources"]["HttpApi"]["Properties"]["DefaultRouteSettings"]
    assert share_route["ThrottlingRateLimit"] < default["ThrottlingRateLimit"]
    assert share_route["ThrottlingBurstLimit"] < default["ThrottlingBurstLimit"]


# -- activity -------------------------------------------------------------------------------------


def test_the_activity_log_lists_shares_revokes_leaves_and_renames_newest_first(people):
    kb_id = create_kb(people)
    share(people, kb_id, "bob")
    share(people, kb_id, "carol")
    assert people.call("DELETE", f"/knowledge-bases/{kb_id}/members/bob").status == HTTPStatus.NO_CONTENT
    assert people.call("DELETE", f"/knowledge-bases/{kb_id}/members/carol", "carol").status == HTTPStatus.NO_CONTENT
    assert people.call("PATCH", f"/knowledge-bases/{kb_id}", body={"name": "改名"}).status == HTTPStatus.OK
    reply = people.call("GET", f"/knowledge-bases/{kb_id}/activity")
    assert reply.status == HTTPStatus.OK
    assert [(e["kind"], e["actor_id"], e["subject"]) for e in reply.body["items"]] == [
        ("renamed", "alice", "改名"),
        ("left", "carol", "carol"),
        ("revoked", "alice", "bob"),
        ("shared", "alice", "carol"),
        ("shared", "alice", "bob"),
    ]
    times = [e["at"] for e in reply.body["items"]]
    assert times == sorted(times, reverse=True)
    page = people.call("GET", f"/knowledge-bases/{kb_id}/activity", query={"limit": "2"}).body
    assert len(page["items"]) == 2
    assert page["next_cursor"]
    rest = people.call(
        "GET", f"/knowledge-bases/{kb_id}/activity", query={"limit": "10", "cursor": page["next_cursor"]}
    ).body
    assert [e["id"] for e in page["items"] + rest["items"]] == [e["id"] for e in reply.body["items"]]
    assert rest["next_cursor"] is None


def test_the_activity_log_is_the_owners_only(people):
    kb_id = create_kb(people)
    share(people, kb_id, "bob")
    reader = people.call("GET", f"/knowledge-bases/{kb_id}/activity", "bob")
    assert (reader.status, reader.body["error"]["code"]) == (HTTPStatus.FORBIDDEN, "owner_only")
    stranger = people.call("GET", f"/knowledge-bases/{kb_id}/activity", "carol")
    absent = people.call("GET", "/knowledge-bases/kb_000000000000000000000000/activity", "carol")
    assert (stranger.status, stranger.body) == (absent.status, absent.body)


def test_a_block_shows_in_the_owners_log_as_a_leave(people):
    kb_id = create_kb(people)
    share(people, kb_id, "bob")
    people.call("POST", "/me/blocked", "bob", body={"user_id": "alice"})
    kinds = [(e["kind"], e["actor_id"]) for e in people.call("GET", f"/knowledge-bases/{kb_id}/activity").body["items"]]
    assert kinds == [("left", "bob"), ("shared", "alice")]


def test_uploads_and_file_and_folder_deletions_are_logged(people):
    from tests.support.docgen import make_md
    from tests.support.uploads import drain_ingest, get_upload, upload

    kb_id = create_kb(people)
    upload_id = upload(people, kb_id, "产品介绍.md", make_md([("MemOS", "记忆操作系统。")]))
    assert drain_ingest(people).failed == []
    file_id = get_upload(people, kb_id, upload_id).file_id
    folder = people.call("POST", f"/knowledge-bases/{kb_id}/folders", body={"name": "资料"}).body["id"]
    assert people.call("DELETE", f"/knowledge-bases/{kb_id}/files/{file_id}").status == HTTPStatus.ACCEPTED
    assert people.call("DELETE", f"/knowledge-bases/{kb_id}/folders/{folder}").status == HTTPStatus.ACCEPTED
    entries = people.call("GET", f"/knowledge-bases/{kb_id}/activity").body["items"]
    assert [(e["kind"], e["actor_id"], e["subject"]) for e in entries] == [
        ("folder_deleted", "alice", folder),
        ("file_deleted", "alice", file_id),
        ("uploaded", "alice", file_id),
    ]


# -- contested identifiers ------------------------------------------------------------------------

SHARED_PHONE = "+8613700137000"


@pytest.fixture
def contested(people):
    """dave and erin both logged in with the same verified phone and email (a reassigned number)."""
    register(people, "dave", "Dave", phone=SHARED_PHONE, email="front-desk@example.com", iat=1_800_000_000)
    register(people, "erin", "Erin", phone=SHARED_PHONE, email="front-desk@example.com", iat=1_800_000_100)
    return people


@pytest.mark.parametrize("identifier", ["137 0013 7000", SHARED_PHONE, "Front-Desk@example.com"])
def test_a_phone_or_email_two_accounts_verified_is_409_identifier_ambiguous(contested, identifier):
    kb_id = create_kb(contested)
    reply = share(contested, kb_id, identifier)
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.CONFLICT, "identifier_ambiguous")
    assert "user id" in reply.body["error"]["message"]
    members = contested.call("GET", f"/knowledge-bases/{kb_id}/members").body["items"]
    assert [m["user_id"] for m in members] == ["alice"]
    # Both keep what they verified; by user id the share goes through.
    assert contested.call("GET", "/me", "dave").body["phone"] == SHARED_PHONE
    assert contested.call("GET", "/me", "erin").body["phone"] == SHARED_PHONE
    assert share(contested, kb_id, "erin").status == HTTPStatus.CREATED


def test_a_contested_phone_resolves_again_once_one_claimant_logs_in_without_it(contested):
    first, second = create_kb(contested), create_kb(contested, name="第二个")
    register(contested, "dave", "Dave")  # a later login whose token no longer verifies the phone or email
    for kb_id, identifier in ((first, SHARED_PHONE), (second, "front-desk@example.com")):
        reply = share(contested, kb_id, identifier)
        assert (reply.status, reply.body["user_id"]) == (HTTPStatus.CREATED, "erin")


def test_an_ambiguous_lookup_counts_as_a_share_attempt(contested, monkeypatch):
    limits(monkeypatch, SHARE_ATTEMPT_LIMIT=2)
    kb_id = create_kb(contested)
    for _ in range(2):
        assert share(contested, kb_id, SHARED_PHONE).status == HTTPStatus.CONFLICT
    reply = share(contested, kb_id, "dave")
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.TOO_MANY_REQUESTS, "rate_limited")


def test_a_contested_identifier_answers_the_same_whether_or_not_a_claimant_blocked_the_owner(contested):
    kb_id = create_kb(contested)
    before = share(contested, kb_id, SHARED_PHONE)
    assert contested.call("POST", "/me/blocked", "dave", body={"user_id": "alice"}).status == HTTPStatus.NO_CONTENT
    after = share(contested, kb_id, SHARED_PHONE)
    assert (after.status, after.body) == (before.status, before.body)
    # By user id, the blocking claimant still looks like no account at all.
    nobody, blocked = share(contested, kb_id, "nobody-at-all"), share(contested, kb_id, "dave")
    assert (blocked.status, blocked.body) == (nobody.status, nobody.body)


def calls_of(action):
    """The AWS calls ``action`` makes, as ``service:Operation``."""
    from tests.support.iam import record_aws_calls

    with record_aws_calls() as calls:
        action()
    return [f"{service}:{operation}" for service, operation, _ in calls]


# Round-trip budgets, counted, not timed: a test fails when a call is added.


def test_a_share_by_phone_or_email_costs_three_dynamodb_calls(people):
    kb_id = create_kb(people)
    for identifier in (BOB_PHONE, "carol@example.com"):
        assert calls_of(lambda i=identifier: share(people, kb_id, i)) == [
            "dynamodb:BatchGetItem",  # owner grant, META, the lookup's claimants, the attempt counter
            "dynamodb:GetItem",  # the reader's profile: recall of new shares, blocks, display name
            "dynamodb:TransactWriteItems",  # grant, count, block check, day counter, attempt, activity
        ]


def test_a_share_by_user_id_costs_two_dynamodb_calls(people):
    kb_id = create_kb(people)
    assert calls_of(lambda: share(people, kb_id, "bob")) == [
        "dynamodb:BatchGetItem",  # owner grant, META, the reader's profile, the attempt counter
        "dynamodb:TransactWriteItems",
    ]


def test_a_refused_share_counts_its_attempt_with_one_more_call(people):
    kb_id = create_kb(people)
    assert calls_of(lambda: share(people, kb_id, "nobody@example.com")) == [
        "dynamodb:BatchGetItem",
        "dynamodb:UpdateItem",  # not found: the attempt counts all the same
    ]


def test_the_kb_list_costs_two_dynamodb_calls(people):
    alices, carols = create_kb(people), create_kb(people, "carol", "卡萝的")
    share(people, alices, "bob")
    share(people, carols, "bob", user="carol")
    create_kb(people, "bob", "鲍勃的")
    assert calls_of(lambda: people.call("GET", "/knowledge-bases", "bob")) == [
        "dynamodb:Query",  # bob's grants (each names its KB's owner)
        "dynamodb:BatchGetItem",  # their META items and the owners' profiles: names and masked contacts
    ]


def test_a_recall_costs_two_queries_one_batched_read_and_a_search_per_backend(people, monkeypatch):
    alices, carols = create_kb(people), create_kb(people, "carol", "卡萝的")
    share(people, alices, "bob")
    share(people, carols, "bob", user="carol")
    create_kb(people, "bob", "鲍勃的")

    def ask() -> None:
        people.call("POST", "/recall", "bob", body={"query": "报销"})

    def recall_searches() -> tuple[list[str], int]:
        # Warm: the MemOS key is read once per container (after ``limits`` resets it), not per recall, and
        # the KBs' fingerprints once while fresh
        ask()
        before = people.memos.calls("/search/memory")
        calls = calls_of(ask)
        return calls, people.memos.calls("/search/memory") - before

    # Cold, the environment first loads each KB's fingerprints and folders (a Query each), during the search,
    # and reads the fleet's MemOS budget item once. The block of tokens it then holds lapses after 0.5 s in
    # service; held for a minute here, so that a loaded machine's pause between two recalls does not cost
    # the warm one a write (the lapse has its own tests: tests/unit/domain/recall/test_fleet_budget.py).
    monkeypatch.setattr(fleet_budget, "HOLD_SECONDS", 60.0)
    limits(monkeypatch)
    cold = [c for c in calls_of(ask) if c.startswith("dynamodb:")]
    assert sorted(cold) == sorted(
        ["dynamodb:Query"] * (2 + 2 * 3)
        + ["dynamodb:BatchGetItem", "dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:PutItem"]
    )
    assert recall_searches() == (
        [
            # bob's per-user recall counter (docs/limits.md); the search's token of the fleet's MemOS budget
            # comes from the block this environment took on the cold recall (docs/memos.md, "Rate")
            "dynamodb:UpdateItem",
            "dynamodb:Query",  # bob's grants: the scope
            "dynamodb:BatchGetItem",  # the KBs' names and the sharers' profiles, during the search
            "dynamodb:Query",  # the scope again, once the search has answered
        ],
        1,  # one search for the three KBs of one backend (a hit would add one BatchGetItem of its files)
    )
    limits(monkeypatch, RECALL_ATTRIBUTION="per_kb")
    assert recall_searches()[1] == 3  # one search per KB of the scope
    limits(monkeypatch, RECALL_MAX_SEARCHES=2)
    assert recall_searches()[1] == 2  # one KB alone, the other two as a group
    limits(monkeypatch, RECALL_ATTRIBUTION="combined")
    assert recall_searches() == (["dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:Query"], 1)

"""Rename, recall toggles and sharing through the real handlers (no MemOS call in any of them)."""

from __future__ import annotations

import time
from http import HTTPStatus
from urllib.parse import quote

import pytest

from memmy_kb.domain.access import compute_recall_scope
from memmy_kb.domain.sharing import shares
from tests.support.sharing import ALICE_PHONE, BOB_PHONE, register, share


@pytest.fixture
def people(service):
    register(service, "alice", "Alice", phone=ALICE_PHONE, email="alice@example.com")
    register(service, "bob", "Bob", phone=BOB_PHONE, email="Bob@Example.com")
    register(service, "carol", "Carol")
    return service


@pytest.fixture
def kb(people):
    return people.call("POST", "/knowledge-bases", "alice", body={"name": "产品资料"}).body


def scope(service, user):
    repo = service.stores
    return {entry.kb_id for entry in compute_recall_scope(repo.kbs, user)}


def memos_calls(service) -> int:
    return sum(service.memos.state()["calls"].values())


@pytest.mark.parametrize(
    "identifier",
    ["13900139000", "139 0013 9000", "+86 139-0013-9000", "bob@example.com", " BOB@example.COM ", "bob"],
)
def test_share_by_phone_email_or_user_id(people, kb, identifier):
    calls = memos_calls(people)
    reply = share(people, kb["id"], identifier)
    assert reply.status == HTTPStatus.CREATED
    assert (reply.body["user_id"], reply.body["display_name"], reply.body["role"]) == ("bob", "Bob", "reader")
    listed = people.call("GET", "/knowledge-bases", "bob").body["items"]
    assert [(k["id"], k["role"], k["recall"], k["owner"]["display_name"]) for k in listed] == [
        (kb["id"], "reader", True, "Alice")
    ]
    assert kb["id"] in scope(people, "bob")
    assert memos_calls(people) == calls


@pytest.mark.parametrize(
    ("identifier", "status", "code"),
    [
        ("+8613700137000", HTTPStatus.NOT_FOUND, "account_not_found"),
        ("nobody@example.com", HTTPStatus.NOT_FOUND, "account_not_found"),
        ("no-such-user", HTTPStatus.NOT_FOUND, "account_not_found"),
        (ALICE_PHONE, HTTPStatus.UNPROCESSABLE_ENTITY, "cannot_share_with_self"),
        ("alice", HTTPStatus.UNPROCESSABLE_ENTITY, "cannot_share_with_self"),
    ],
)
def test_share_refusals(people, kb, identifier, status, code):
    reply = share(people, kb["id"], identifier)
    assert (reply.status, reply.body["error"]["code"]) == (status, code)


def test_sharing_twice_is_409(people, kb):
    assert share(people, kb["id"], "bob").status == HTTPStatus.CREATED
    again = share(people, kb["id"], BOB_PHONE)
    assert (again.status, again.body["error"]["code"]) == (HTTPStatus.CONFLICT, "already_member")


def test_member_limit(people, kb, monkeypatch):
    monkeypatch.setattr(shares, "MAX_READERS", 1)
    assert share(people, kb["id"], "bob").status == HTTPStatus.CREATED
    full = share(people, kb["id"], "carol")
    assert (full.status, full.body["error"]["code"]) == (HTTPStatus.CONFLICT, "member_limit_reached")
    assert (
        people.call("DELETE", f"/knowledge-bases/{kb['id']}/members/bob", "alice").status
        == HTTPStatus.NO_CONTENT
    )
    assert share(people, kb["id"], "carol").status == HTTPStatus.CREATED


def test_members_list_owner_first(people, kb):
    share(people, kb["id"], "bob")
    share(people, kb["id"], "carol")
    members = people.call("GET", f"/knowledge-bases/{kb['id']}/members", "alice").body["items"]
    assert [(m["user_id"], m["display_name"], m["role"]) for m in members] == [
        ("alice", "Alice", "owner"),
        ("bob", "Bob", "reader"),
        ("carol", "Carol", "reader"),
    ]


def test_revoke_removes_from_list_and_scope_at_once(people, kb):
    share(people, kb["id"], "bob")
    assert (
        people.call("DELETE", f"/knowledge-bases/{kb['id']}/members/bob", "alice").status
        == HTTPStatus.NO_CONTENT
    )
    assert people.call("GET", "/knowledge-bases", "bob").body == {"items": []}
    assert scope(people, "bob") == set()
    gone = people.call("GET", f"/knowledge-bases/{kb['id']}", "bob")
    assert gone.status == HTTPStatus.NOT_FOUND
    again = people.call("DELETE", f"/knowledge-bases/{kb['id']}/members/bob", "alice")
    assert (again.status, again.body["error"]["code"]) == (HTTPStatus.NOT_FOUND, "member_not_found")


def test_leave(people, kb):
    share(people, kb["id"], "bob")
    share(people, kb["id"], "carol")
    other = people.call("DELETE", f"/knowledge-bases/{kb['id']}/members/carol", "bob")
    assert (other.status, other.body["error"]["code"]) == (HTTPStatus.FORBIDDEN, "owner_only")
    assert (
        people.call("DELETE", f"/knowledge-bases/{kb['id']}/members/bob", "bob").status
        == HTTPStatus.NO_CONTENT
    )
    assert scope(people, "bob") == set()
    assert kb["id"] in scope(people, "carol")
    owner = people.call("DELETE", f"/knowledge-bases/{kb['id']}/members/alice", "alice")
    assert (owner.status, owner.body["error"]["code"]) == (
        HTTPStatus.UNPROCESSABLE_ENTITY,
        "owner_cannot_leave",
    )


def test_recall_toggle_changes_only_the_callers_setting(people, kb):
    share(people, kb["id"], "bob")
    off = people.call("PUT", f"/knowledge-bases/{kb['id']}/recall", "bob", body={"enabled": False})
    assert (off.status, off.body["recall"], off.body["role"]) == (HTTPStatus.OK, False, "reader")
    assert scope(people, "bob") == set()
    assert kb["id"] in scope(people, "alice")
    assert people.call("GET", f"/knowledge-bases/{kb['id']}", "alice").body["recall"] is True
    on = people.call("PUT", f"/knowledge-bases/{kb['id']}/recall", "bob", body={"enabled": True})
    assert on.body["recall"] is True
    assert kb["id"] in scope(people, "bob")


@pytest.mark.parametrize("body", [{}, {"enabled": "yes"}, {"enabled": 1}, {"enabled": None}])
def test_recall_toggle_needs_a_boolean(people, kb, body):
    reply = people.call("PUT", f"/knowledge-bases/{kb['id']}/recall", "alice", body=body)
    assert reply.status == HTTPStatus.UNPROCESSABLE_ENTITY


def test_rename_is_the_owners_and_changes_only_our_record(people, kb):
    share(people, kb["id"], "bob")
    calls = memos_calls(people)
    reader = people.call("PATCH", f"/knowledge-bases/{kb['id']}", "bob", body={"name": "mine now"})
    assert (reader.status, reader.body["error"]["code"]) == (HTTPStatus.FORBIDDEN, "owner_only")
    renamed = people.call("PATCH", f"/knowledge-bases/{kb['id']}", "alice", body={"name": " 销售资料 "})
    assert (renamed.status, renamed.body["name"]) == (HTTPStatus.OK, "销售资料")
    assert people.call("GET", "/knowledge-bases", "bob").body["items"][0]["name"] == "销售资料"
    assert memos_calls(people) == calls
    assert (
        people.call("PATCH", f"/knowledge-bases/{kb['id']}", "alice", body={"name": ""}).status
        == HTTPStatus.UNPROCESSABLE_ENTITY
    )


def test_reader_cannot_share_or_list_members(people, kb):
    share(people, kb["id"], "bob")
    assert share(people, kb["id"], "carol", user="bob").status == HTTPStatus.FORBIDDEN
    assert people.call("GET", f"/knowledge-bases/{kb['id']}/members", "bob").status == HTTPStatus.FORBIDDEN


def test_account_found_only_through_registered_profiles(service):
    register(service, "alice", "Alice")
    kb = service.call("POST", "/knowledge-bases", "alice", body={"name": "x"}).body
    # dave has logged in (he has a token) but never registered a profile: he cannot be found yet.
    assert share(service, kb["id"], "dave").body["error"]["code"] == "account_not_found"
    register(service, "dave", "Dave", phone="13600136000")
    assert share(service, kb["id"], "13600136000").status == HTTPStatus.CREATED


def test_a_full_kb_answers_the_same_whether_or_not_the_account_exists(people, kb, monkeypatch):
    monkeypatch.setattr(shares, "MAX_READERS", 1)
    assert share(people, kb["id"], "bob").status == HTTPStatus.CREATED
    existing = share(people, kb["id"], "carol")
    missing = share(people, kb["id"], "+8613700137000")
    assert (existing.status, existing.body) == (missing.status, missing.body)
    assert existing.body["error"]["code"] == "member_limit_reached"


@pytest.mark.parametrize("reader", ["auth0|64f1c2", "google-oauth2|1083", "张 三"])
def test_a_reader_whose_id_must_be_encoded_is_revoked_and_can_leave(kb, people, reader):
    # Given a reader whose user id a client must percent-encode in the path
    register(people, reader, "Reader")
    assert share(people, kb["id"], reader).status == HTTPStatus.CREATED
    path = f"/knowledge-bases/{kb['id']}/members/{quote(reader, safe='')}"
    # When the owner revokes them, then they lose the KB and its recall
    assert people.call("DELETE", path, "alice").status == HTTPStatus.NO_CONTENT
    assert kb["id"] not in scope(people, reader)
    # When shared again and they leave, then it is gone again
    assert share(people, kb["id"], reader).status == HTTPStatus.CREATED
    assert people.call("DELETE", path, reader).status == HTTPStatus.NO_CONTENT
    assert kb["id"] not in scope(people, reader)


def test_a_look_alike_email_does_not_take_over_the_real_one(people):
    # Given kelvin registered kelvin@example.com, then mallory's provider verified a KELVIN SIGN look-alike
    register(people, "kelvin", "Kelvin", email="kelvin@example.com", iat=1_800_000_000)
    register(people, "mallory", "Mallory", email="\u212aelvin@example.com", iat=1_800_000_100)
    # Then the lookup still points at kelvin, and mallory's profile holds no email
    assert people.stores.profiles.get_lookup_claimants("email", "kelvin@example.com") == {"kelvin"}
    assert people.stores.profiles.get_profile("mallory").email is None


@pytest.mark.parametrize("claimed", [BOB_PHONE + " ext 12", BOB_PHONE + ";ext=1"])
def test_a_phone_claim_with_an_extension_is_not_truncated_onto_another_number(people, claimed):
    # Given bob holds his number; mallory's (later) token verifies that number with an extension
    register(people, "mallory", "Mallory", phone=claimed, iat=int(time.time()) + 60)
    # Then bob keeps it, and mallory's profile holds no phone
    assert people.stores.profiles.get_lookup_claimants("phone", BOB_PHONE) == {"bob"}
    assert people.stores.profiles.get_profile("mallory").phone is None

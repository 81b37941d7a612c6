"""Sharing you can trust, over HTTP on a local stack: the reader's consent to recall new shares,
blocking an owner, the share-attempt limit, a contested phone, and the capacity limits.

The module starts a stack of its own (``bench.load_stack``, as ``make load`` does) from a copy of
``template.yaml`` with the limits lowered as a deployer would set them, so that a handful of requests
reaches each limit: 10 share attempts a day per owner, 2 KBs per user, 1 file and 64 KiB per KB. Every
test makes its own users, so the tests share the stack but no state.
"""

from __future__ import annotations

import math
import re
import secrets
import time
import uuid
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

import httpx
import pytest

from bench import load
from bench.load_stack import load_template_copy
from memmy_local.template import TEMPLATE_ENV_VAR
from tests.support.polling import wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local_stack("a stack of its own with lowered limits"),
]

ATTEMPT_LIMIT = 10
ATTEMPT_WINDOW_SECONDS = 86400
LIMITS = {
    "SHARE_ATTEMPT_LIMIT": str(ATTEMPT_LIMIT),
    "SHARE_ATTEMPT_WINDOW_SECONDS": str(ATTEMPT_WINDOW_SECONDS),
    "MAX_KBS_PER_USER": "2",
    "MAX_FILES_PER_KB": "1",
    "MAX_BYTES_PER_KB": "65536",
}
QUESTION = "差旅报销需要哪些发票"


def error(code: str, message: str) -> dict[str, Any]:
    """The API's error body."""
    return {"error": {"code": code, "message": message}}


NO_ACCOUNT = error("account_not_found", "No Memmy account has this user id, phone or email.")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[load.Stack]:
    workdir = tmp_path_factory.mktemp("trust")
    template = load_template_copy(workdir, raise_limits=False)
    text = template.read_text(encoding="utf-8")
    for name, value in LIMITS.items():
        text, replaced = re.subn(rf"^(\s*{name}:\s*).*$", rf'\g<1>"{value}"', text, flags=re.MULTILINE)
        assert replaced >= 1, name  # each function that takes it (the share and the teams functions' limits)
    template.write_text(text, encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        # bench.load_stack copies the template it is pointed at, keeping its limits.
        patch.setenv(TEMPLATE_ENV_VAR, str(template))
        started = load.start_stack(workdir / "stack", load.LoadSettings(keep_limits=True))
    try:
        assert started.limits == {
            "SHARE_ATTEMPT_LIMIT": "10",
            "MAX_KBS_PER_USER": "2",
            "NEW_MEMBERS_PER_DAY": "100",
        }
        yield started
    finally:
        started.stop()


# ------------------------------------------------------------------------------------------- helpers


def new_phone() -> str:
    return f"+86138{secrets.randbelow(10**8):08d}"


def masked(phone: str) -> str:
    """``+8613800138000`` as others see it: ``138****8000``."""
    national = phone.removeprefix("+86")
    return f"{national[:3]}****{national[-4:]}"


class Accounts:
    """New accounts on the stack, each registered with ``PUT /me``; their clients closed after the test."""

    def __init__(self, stack: load.Stack) -> None:
        self.stack = stack
        self.clients: list[httpx.Client] = []

    def new(self, role: str, **claims: Any) -> tuple[str, httpx.Client]:
        """A new account's user id and a client signed in as it (``claims`` as ``issue_token``'s)."""
        user_id = f"{role}-{uuid.uuid4().hex[:8]}"
        token = self.stack.token(user_id, **claims)
        client = httpx.Client(
            base_url=self.stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        self.clients.append(client)
        registered = client.put("/me")
        assert registered.status_code == HTTPStatus.OK, registered.text
        return user_id, client

    def close(self) -> None:
        for client in self.clients:
            client.close()


@pytest.fixture
def accounts(stack: load.Stack) -> Iterator[Accounts]:
    made = Accounts(stack)
    try:
        yield made
    finally:
        made.close()


def create_kb(api: httpx.Client, name: str) -> dict[str, Any]:
    created = api.post("/knowledge-bases", json={"name": name})
    assert created.status_code == HTTPStatus.CREATED, created.text
    kb: dict[str, Any] = created.json()
    return kb


def document(marker: str) -> bytes:
    return (
        f"# 差旅报销制度\n差旅报销需要哪些发票：住宿发票、机票行程单和出租车发票。{marker} "
        "住宿发票须为增值税专用发票，每晚不超过 500 元。\n"
    ).encode()


def upload(api: httpx.Client, kb_id: str, filename: str, data: bytes) -> str:
    """Upload through the presigned POST and wait until the ingest has made the file available; its id."""
    ticket = api.post(
        f"/knowledge-bases/{kb_id}/uploads", json={"filename": filename, "size_bytes": len(data)}
    )
    assert ticket.status_code == HTTPStatus.CREATED, ticket.text
    posted = httpx.post(
        ticket.json()["url"],
        data=ticket.json()["fields"],
        files={"file": (filename, data, "text/markdown")},
        timeout=30,
    )
    assert posted.status_code == HTTPStatus.NO_CONTENT, posted.text
    def available() -> str | None:
        files = api.get(f"/knowledge-bases/{kb_id}/files").json()["files"]
        if [(f["name"], f["status"]) for f in files] != [(filename, "available")]:
            return None
        file_id: str = files[0]["id"]
        return file_id

    return wait_until(available, timeout=30, message=f"{filename} to be the KB's one available file")


def share(api: httpx.Client, kb_id: str, identifier: str) -> httpx.Response:
    return api.post(f"/knowledge-bases/{kb_id}/members", json={"identifier": identifier})


def listed(api: httpx.Client) -> dict[str, dict[str, Any]]:
    reply = api.get("/knowledge-bases")
    assert reply.status_code == HTTPStatus.OK, reply.text
    return {kb["id"]: kb for kb in reply.json()["items"]}


def recalled(api: httpx.Client, markers: set[str]) -> tuple[set[str], int]:
    """Which of ``markers`` the caller's recall returns, and the recall's scope size."""
    reply = api.post("/recall", json={"query": QUESTION, "limit": 10})
    assert reply.status_code == HTTPStatus.OK, reply.text
    body = reply.json()
    assert body["discarded"] is False
    found = {m for m in markers for item in body["items"] if m in item["content"]}
    return found, body["scope_size"]


def as_reader(kb: dict[str, Any], *, recall: bool, contact: str | None) -> dict[str, Any]:
    """The owner's KB as a reader's list shows it."""
    return {**kb, "role": "reader", "recall": recall, "owner": {**kb["owner"], "contact": contact}}


def members(api: httpx.Client, kb_id: str) -> list[tuple[str, str]]:
    reply = api.get(f"/knowledge-bases/{kb_id}/members")
    assert reply.status_code == HTTPStatus.OK, reply.text
    return [(m["user_id"], m["role"]) for m in reply.json()["items"]]


# --------------------------------------------------------------------------------------------- tests


def test_new_shares_arrive_with_recall_off_once_the_reader_opts_out_until_they_turn_it_on(accounts):
    owner_phone, reader_phone = new_phone(), new_phone()
    owner_id, owner = accounts.new("owner", name="Alice", phone=owner_phone)
    reader_id, reader = accounts.new("reader", name="Bob", phone=reader_phone)
    earlier, later = create_kb(owner, "早先的资料"), create_kb(owner, "后来的资料")
    marker_earlier, marker_later = f"EARLY{uuid.uuid4().hex[:6]}", f"LATER{uuid.uuid4().hex[:6]}"
    upload(owner, earlier["id"], "早先.md", document(marker_earlier))
    upload(owner, later["id"], "后来.md", document(marker_later))
    markers = {marker_earlier, marker_later}
    # The owner's view once the files are in (each KB now counts its file and bytes)
    earlier, later = (listed(owner)[kb["id"]] for kb in (earlier, later))

    # Given a KB shared before the reader opts out
    assert share(owner, earlier["id"], reader_id).status_code == HTTPStatus.CREATED

    # When the reader turns recall of new shares off
    patched = reader.patch("/me", json={"recall_new_shares": False})
    assert patched.status_code == HTTPStatus.OK, patched.text
    assert patched.json() == {
        "user_id": reader_id,
        "display_name": "Bob",
        "email": None,
        "phone": reader_phone,
        "recall_new_shares": False,
    }
    assert reader.get("/me").json()["recall_new_shares"] is False

    # And the owner shares another KB with an ingested document, by phone
    shared = share(owner, later["id"], reader_phone)
    assert shared.status_code == HTTPStatus.CREATED, shared.text
    assert {k: v for k, v in shared.json().items() if k != "shared_at"} == {
        "user_id": reader_id,
        "display_name": "Bob",
        "role": "reader",
    }

    # Then "shared with me" shows it with recall off, the earlier one as it was, the owner's phone masked
    contact = masked(owner_phone)
    assert contact == f"138****{owner_phone[-4:]}"
    assert later["owner"] == {"user_id": owner_id, "display_name": "Alice", "contact": contact}
    assert listed(reader) == {
        earlier["id"]: as_reader(earlier, recall=True, contact=contact),
        later["id"]: as_reader(later, recall=False, contact=contact),
    }
    # And recall finds the earlier KB's document and not the new one's
    assert recalled(reader, markers) == ({marker_earlier}, 1)

    # When the reader turns recall of that KB on
    toggled = reader.put(f"/knowledge-bases/{later['id']}/recall", json={"enabled": True})
    assert toggled.status_code == HTTPStatus.OK, toggled.text
    assert toggled.json() == as_reader(later, recall=True, contact=contact)

    # Then the same recall returns its document too
    assert recalled(reader, markers) == (markers, 2)
    # And the owner's own recall was never affected
    assert recalled(owner, markers) == (markers, 2)


def test_a_blocked_owner_loses_the_reader_and_is_answered_as_for_no_account(accounts):
    # Given a reader of Alice's KB and of Carol's, each with a marked document, recalling from both
    reader_phone, reader_email = new_phone(), f"bob-{uuid.uuid4().hex[:8]}@example.com"
    owner_id, owner = accounts.new("owner", name="Alice", email=f"alice-{uuid.uuid4().hex[:8]}@example.com")
    reader_id, reader = accounts.new("reader", name="Bob", phone=reader_phone, email=reader_email)
    _, other_owner = accounts.new("carol", name="Carol")
    blocked_kb, other_kb = create_kb(owner, "Alice 的资料"), create_kb(other_owner, "Carol 的资料")
    marker_blocked, marker_other = f"ALICE{uuid.uuid4().hex[:6]}", f"CAROL{uuid.uuid4().hex[:6]}"
    file_id = upload(owner, blocked_kb["id"], "alice.md", document(marker_blocked))
    upload(other_owner, other_kb["id"], "carol.md", document(marker_other))
    markers = {marker_blocked, marker_other}
    assert share(owner, blocked_kb["id"], reader_id).status_code == HTTPStatus.CREATED
    assert share(other_owner, other_kb["id"], reader_id).status_code == HTTPStatus.CREATED
    assert set(listed(reader)) == {blocked_kb["id"], other_kb["id"]}
    assert recalled(reader, markers) == (markers, 2)

    # When the reader blocks the owner
    blocked = reader.post("/me/blocked", json={"user_id": owner_id})
    assert (blocked.status_code, blocked.content) == (HTTPStatus.NO_CONTENT, b"")
    assert reader.get("/me/blocked").json() == {"items": [{"user_id": owner_id, "display_name": "Alice"}]}

    # Then they have left the owner's KB (and only it): gone from their list and their recall
    assert set(listed(reader)) == {other_kb["id"]}
    assert recalled(reader, markers) == ({marker_other}, 1)

    # And the owner's shares by user id, phone and email answer exactly as for an account that does not exist
    unknown = [f"nobody-{uuid.uuid4().hex[:8]}", new_phone(), f"nobody-{uuid.uuid4().hex[:8]}@example.com"]
    for identifier, absent in zip([reader_id, reader_phone, reader_email], unknown, strict=True):
        refused, no_account = (
            share(owner, blocked_kb["id"], identifier),
            share(owner, blocked_kb["id"], absent),
        )
        assert (refused.status_code, refused.json()) == (HTTPStatus.NOT_FOUND, NO_ACCOUNT), identifier
        assert (no_account.status_code, no_account.json()) == (HTTPStatus.NOT_FOUND, NO_ACCOUNT), absent
        assert refused.content == no_account.content
    assert set(listed(reader)) == {other_kb["id"]}
    assert members(owner, blocked_kb["id"]) == [(owner_id, "owner")]

    # And the owner's activity log shows a leave, never a block
    activity = owner.get(f"/knowledge-bases/{blocked_kb['id']}/activity")
    assert activity.status_code == HTTPStatus.OK, activity.text
    entries = [(a["kind"], a["actor_id"], a["subject"]) for a in activity.json()["items"]]
    assert entries == [
        ("left", reader_id, reader_id),
        ("shared", owner_id, reader_id),
        ("uploaded", owner_id, file_id),
    ]
    assert "block" not in activity.text.lower()

    # When the reader lifts the block, then the owner can share again (the KB comes back with recall on)
    unblocked = reader.delete(f"/me/blocked/{owner_id}")
    assert (unblocked.status_code, unblocked.content) == (HTTPStatus.NO_CONTENT, b"")
    assert reader.get("/me/blocked").json() == {"items": []}
    again = share(owner, blocked_kb["id"], reader_email)
    assert again.status_code == HTTPStatus.CREATED, again.text
    assert again.json()["user_id"] == reader_id
    assert listed(reader)[blocked_kb["id"]]["recall"] is True
    assert recalled(reader, markers) == (markers, 2)


def test_routes_taking_a_user_id_answer_alike_for_an_account_and_none_and_blocks_are_bounded(accounts):
    owner_id, owner = accounts.new("owner", name="Alice")
    _, reader = accounts.new("reader", name="Bob")
    carol_id, _ = accounts.new("carol", name="Carol")
    ghost_id = f"ghost-{uuid.uuid4().hex[:8]}"
    kb = create_kb(owner, "Alice 的资料")
    assert share(owner, kb["id"], reader.get("/me").json()["user_id"]).status_code == HTTPStatus.CREATED

    # When each route that takes a user id is called for an account and for an id with none
    calls = [
        lambda who: owner.delete(f"/knowledge-bases/{kb['id']}/members/{who}"),
        lambda who: reader.post("/me/blocked", json={"user_id": who}),
        lambda who: reader.delete(f"/me/blocked/{who}"),
        lambda who: reader.post("/me/blocked", json={"user_id": who}),
    ]
    for call in calls:
        account, none = call(carol_id), call(ghost_id)
        # Then the answers are the same, byte for byte
        assert (account.status_code, account.content) == (none.status_code, none.content)

    # And the block list names only the owner whose KB the reader saw, not the account they typed
    assert reader.post("/me/blocked", json={"user_id": owner_id}).status_code == HTTPStatus.NO_CONTENT
    assert reader.get("/me/blocked").json() == {
        "items": sorted(
            [
                {"user_id": carol_id, "display_name": None},
                {"user_id": ghost_id, "display_name": None},
                {"user_id": owner_id, "display_name": "Alice"},
            ],
            key=lambda item: item["user_id"],
        )
    }

    # And every block counts in the reader's window (5 so far), unblocking frees none
    for _ in range(ATTEMPT_LIMIT - 5):
        assert reader.delete(f"/me/blocked/{ghost_id}").status_code == HTTPStatus.NO_CONTENT
        assert reader.post("/me/blocked", json={"user_id": ghost_id}).status_code == HTTPStatus.NO_CONTENT
    refused = reader.post("/me/blocked", json={"user_id": f"nobody-{uuid.uuid4().hex[:8]}"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (HTTPStatus.TOO_MANY_REQUESTS, "rate_limited")
    assert 0 < int(refused.headers["Retry-After"]) <= 2 * ATTEMPT_WINDOW_SECONDS


def _elapsed(now: float) -> float:
    """The fraction of the current attempt window gone at ``now`` (windows start at multiples of it)."""
    return (now % ATTEMPT_WINDOW_SECONDS) / ATTEMPT_WINDOW_SECONDS


def test_share_attempts_past_the_limit_are_429_with_retry_after_and_lookups_of_no_account_count(accounts):
    owner_id, owner = accounts.new("owner", name="Alice")
    first_id, first = accounts.new("first", name="First")
    late_id, late = accounts.new("late", name="Late")
    kb = create_kb(owner, "限流")
    # The attempts below must fall in one window: within a minute of the next (00:00 UTC), wait for it.
    to_next = ATTEMPT_WINDOW_SECONDS - time.time() % ATTEMPT_WINDOW_SECONDS
    if to_next < 60:
        time.sleep(to_next + 1)

    # Given one share that lands and nine lookups of accounts that do not exist (ids, phones, emails)
    assert share(owner, kb["id"], first_id).status_code == HTTPStatus.CREATED
    absent = [f"nobody-{uuid.uuid4().hex[:8]}" for _ in range(3)] + [new_phone() for _ in range(3)]
    absent += [f"nobody-{uuid.uuid4().hex[:8]}@example.com" for _ in range(3)]
    for identifier in absent:
        reply = share(owner, kb["id"], identifier)
        assert (reply.status_code, reply.json()) == (HTTPStatus.NOT_FOUND, NO_ACCOUNT), identifier
    assert 1 + len(absent) == ATTEMPT_LIMIT

    # When the owner shares with an existing account: the window is full
    before = time.time()
    refused = share(owner, kb["id"], late_id)
    after = time.time()

    # Then 429 rate_limited with Retry-After in whole seconds: the window of 10 attempts is full and the
    # previous one empty, so one more fits once the sliding estimate 10 * (1 - elapsed) drops to 9, a
    # tenth into the next window (the attempts are all in one window: see the wait above).
    assert refused.status_code == HTTPStatus.TOO_MANY_REQUESTS, refused.text
    retry_after = refused.headers["Retry-After"]
    assert retry_after.isdigit(), retry_after
    seconds = int(retry_after)
    assert refused.json() == {
        "error": {
            "code": "rate_limited",
            "message": "Too many share attempts: at most 10 every 24 hours. Try again later.",
            "details": {"retry_after_seconds": seconds},
        }
    }
    soonest = math.floor((1 - _elapsed(after) + 1 / ATTEMPT_LIMIT) * ATTEMPT_WINDOW_SECONDS)
    latest = math.ceil((1 - _elapsed(before) + 1 / ATTEMPT_LIMIT) * ATTEMPT_WINDOW_SECONDS)
    assert 0 < soonest <= seconds <= latest, (soonest, seconds, latest)
    # And nothing was granted
    assert listed(late) == {}
    assert members(owner, kb["id"]) == [(owner_id, "owner"), (first_id, "reader")]
    assert set(listed(first)) == {kb["id"]}

    # And a lookup of no account is refused the same way: the limit answers before any lookup
    probe = share(owner, kb["id"], f"nobody-{uuid.uuid4().hex[:8]}@example.com")
    assert (probe.status_code, probe.json()["error"]["code"]) == (
        HTTPStatus.TOO_MANY_REQUESTS,
        "rate_limited",
    )
    assert int(probe.headers["Retry-After"]) > 0

    # And the limit is the owner's: another owner still shares with the same account
    _, other = accounts.new("other", name="Other")
    other_kb = create_kb(other, "别人的")
    assert share(other, other_kb["id"], late_id).status_code == HTTPStatus.CREATED


def test_a_phone_two_accounts_verified_names_nobody_and_the_user_id_still_works(accounts):
    phone = new_phone()
    owner_id, owner = accounts.new("owner", name="Alice")
    _, first = accounts.new("twin", name="Twin", phone=phone)
    second_id, second = accounts.new("twin", name="Twin", phone=phone)
    assert first.get("/me").json()["phone"] == second.get("/me").json()["phone"] == phone
    kb = create_kb(owner, "双胞胎")

    ambiguous = error(
        "identifier_ambiguous",
        "More than one Memmy account has verified this phone or email; share by their user id instead.",
    )
    national = phone.removeprefix("+86")
    for written in (phone, f"{national[:3]} {national[3:7]} {national[7:]}"):
        reply = share(owner, kb["id"], written)
        assert (reply.status_code, reply.json()) == (HTTPStatus.CONFLICT, ambiguous), written
    assert members(owner, kb["id"]) == [(owner_id, "owner")]
    assert listed(first) == listed(second) == {}

    by_id = share(owner, kb["id"], second_id)
    assert by_id.status_code == HTTPStatus.CREATED, by_id.text
    assert by_id.json()["user_id"] == second_id
    assert set(listed(second)) == {kb["id"]}
    assert listed(first) == {}


def test_the_kbs_a_user_owns_and_a_kbs_files_and_bytes_are_capped(accounts):
    _, owner = accounts.new("owner", name="Alice")
    full, empty = create_kb(owner, "一"), create_kb(owner, "二")

    third = owner.post("/knowledge-bases", json={"name": "三"})
    assert (third.status_code, third.json()) == (
        HTTPStatus.CONFLICT,
        error("kb_limit_reached", "You can own at most 2 knowledge bases; delete one first."),
    )
    assert set(listed(owner)) == {full["id"], empty["id"]}

    upload(owner, full["id"], "一.md", document("FULL"))
    second_file = owner.post(
        f"/knowledge-bases/{full['id']}/uploads", json={"filename": "二.md", "size_bytes": 10}
    )
    assert (second_file.status_code, second_file.json()) == (
        HTTPStatus.CONFLICT,
        error("kb_file_limit_reached", "A knowledge base can hold at most 1 files; delete some first."),
    )

    too_big = owner.post(
        f"/knowledge-bases/{empty['id']}/uploads", json={"filename": "大.md", "size_bytes": 65537}
    )
    assert (too_big.status_code, too_big.json()) == (
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
        error(
            "kb_storage_limit_reached",
            "A knowledge base can hold at most 64 KiB of files; this file does not fit.",
        ),
    )
    fits = owner.post(
        f"/knowledge-bases/{empty['id']}/uploads", json={"filename": "刚好.md", "size_bytes": 65536}
    )
    assert fits.status_code == HTTPStatus.CREATED, fits.text

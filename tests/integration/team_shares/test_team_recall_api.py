"""Recall through teams over the local stack (docs/teams.md, "Data"): a member's recall finds the team's
KBs and names the team; a removal, a leave, an unshare or a team's deletion takes the KB out of the next
recall, and out of one whose search it lands during; the reads do not grow with the number of teams."""

from __future__ import annotations

import json
import threading
from http import HTTPStatus
from typing import Any

import pytest

from memmy_kb.adapters.memos.client import MemosClient
from memmy_kb.adapters.memos.key import StaticApiKeyProvider
from memmy_kb.composition import get_kb_store, reset_composition
from memmy_kb.domain.engine import FileInput
from tests.support.events import FakeLambdaContext, claims_for, http_event
from tests.support.polling import wait_until
from tests.support.sharing import register, share
from tests.support.teams import (
    delete_team,
    make_team,
    new_membership,
    put_membership,
    remove_member,
    share_with_team,
    unshare_from_team,
)

SEARCH = "/search/memory"
QUERY = "差旅报销需要哪些发票"
TEAM = "tm_finance"
# One marker per document: a marker in a reply tells which KB MemOS searched.
DOCS = {
    "alpha": "# 差旅报销制度\n差旅报销需要哪些发票：住宿发票和行程单。ALPHA1 住宿发票须为专票。",
    "bravo": "# 报销常见问题\n差旅报销需要哪些发票？出租车发票和机票行程单。BRAVO2 须在30天内提交。",
    "gamma": "# 财务手册\n差旅报销需要哪些发票由财务部规定。GAMMA3 发票抬头写公司全称。",
}


@pytest.fixture(autouse=True)
def per_kb_plan(service, monkeypatch):
    """Documents go into MemOS directly, without the ingest's fingerprints: the per-KB plan names their
    KBs without them. No rate governor and no per-user limit: the race recalls many times a second."""
    monkeypatch.setenv("RECALL_ATTRIBUTION", "per_kb")
    monkeypatch.setenv("RECALL_BURST", "1000")
    monkeypatch.setenv("RECALL_RATE_GOVERNOR", "off")
    reset_composition()


def add_document(service, kb_id: str, marker: str) -> None:
    """The document of ``marker`` put into the KB's MemOS KB, as the ingest would; waits until searchable."""
    memos_kb_id = get_kb_store().get_kb(kb_id).memos_kb_id
    client = MemosClient(service.memos.base_url, StaticApiKeyProvider(service.memos.api_key))
    with client:
        document = FileInput.from_bytes(DOCS[marker].encode(), name=f"{marker}.md", mime_type="text/markdown")
        client.add_knowledgebase_files(memos_kb_id, [document])

    def processed() -> bool:
        (kb,) = [k for k in service.memos.state()["knowledge_bases"] if k["id"] == memos_kb_id]
        return bool(kb["files"]) and all(f["status"] == "completed" for f in kb["files"])

    wait_until(processed, timeout=10, interval=0.02, message="the document to be processed")


def kb_with(service, owner: str, marker: str) -> str:
    reply = service.call("POST", "/knowledge-bases", owner, body={"name": f"{marker} 资料"})
    assert reply.status == HTTPStatus.CREATED, reply.body
    add_document(service, reply.body["id"], marker)
    return reply.body["id"]


def recall(service, user: str = "bob") -> Any:
    reply = service.call("POST", "/recall", user, body={"query": QUERY})
    assert reply.status == HTTPStatus.OK, reply.body
    return reply.body


MARKERS = {"alpha": "ALPHA1", "bravo": "BRAVO2", "gamma": "GAMMA3"}


def markers(body: Any) -> set[str]:
    text = json.dumps(body, ensure_ascii=False)
    return {name for name, marker in MARKERS.items() if marker in text}


@pytest.fixture
def world(service):
    """alice owns alpha, shared with the team; bob, a member, owns bravo; carol owns gamma, shared with nobody."""
    for user in ("alice", "bob", "carol", "dave"):
        register(service, user, user.title())
    make_team(service, TEAM, "alice", "bob", invited=("dave",))
    kbs = {"alpha": kb_with(service, "alice", "alpha"), "bravo": kb_with(service, "bob", "bravo")}
    kbs["gamma"] = kb_with(service, "carol", "gamma")
    assert share_with_team(service, kbs["alpha"], TEAM).status == HTTPStatus.CREATED
    return kbs


def test_a_members_recall_finds_the_team_kb_and_names_the_team(service, world):
    body = recall(service)
    assert markers(body) == {"alpha", "bravo"}
    (item,) = [i for i in body["items"] if "ALPHA1" in i["content"]]
    assert item["knowledge_base"] == {"id": world["alpha"], "name": "alpha 资料"}
    assert (item["owner"]["name"], item["team"]) == ("Alice", {"id": TEAM, "name": f"团队 {TEAM}"})
    assert f"「alpha 资料」（共享者 shared by: Alice, 团队 team: 「团队 {TEAM}」）" in body["context"]
    (own,) = [i for i in body["items"] if "BRAVO2" in i["content"]]
    assert own["team"] is None


def test_invited_people_and_strangers_recall_nothing_of_the_team(service, world):
    assert markers(recall(service, "dave")) == set()
    assert markers(recall(service, "carol")) == {"gamma"}


def test_turning_a_team_kb_off_is_the_members_own_choice(service, world):
    path = f"/knowledge-bases/{world['alpha']}/recall"
    assert service.call("PUT", path, "bob", body={"enabled": False}).status == HTTPStatus.OK
    assert markers(recall(service)) == {"bravo"}
    assert service.call("PUT", path, "bob", body={"enabled": True}).status == HTTPStatus.OK
    assert markers(recall(service)) == {"alpha", "bravo"}


def test_a_removed_member_never_sees_a_kb_shared_after_the_removal(service, world):
    """The new-enemy order: the removal lands first, the share of a second KB after it."""
    remove_member(service, "bob", TEAM)
    gamma_owner_joins = new_membership("carol", TEAM)
    put_membership(service.stores.table, gamma_owner_joins)
    assert share_with_team(service, world["gamma"], TEAM, user="carol").status == HTTPStatus.CREATED
    assert markers(recall(service)) == {"bravo"}
    listed = service.call("GET", "/knowledge-bases", "bob").body["items"]
    assert [k["id"] for k in listed] == [world["bravo"]]


def test_an_unshare_leaves_the_next_recall_without_it(service, world):
    assert unshare_from_team(service, world["alpha"], TEAM).status == HTTPStatus.NO_CONTENT
    assert markers(recall(service)) == {"bravo"}


def test_a_membership_whose_team_meta_is_gone_gives_nothing(service, world):
    delete_team(service, TEAM)
    assert markers(recall(service)) == {"bravo"}


@pytest.mark.parametrize("goes", ["direct", "team"])
def test_a_kb_read_directly_and_through_a_team_is_one_search_and_stays_while_either_way_is_left(
    service, world, goes
):
    assert share(service, world["alpha"], "bob").status == HTTPStatus.CREATED
    before = service.memos.calls(SEARCH)
    body = recall(service)
    assert (service.memos.calls(SEARCH) - before, body["scope_size"]) == (2, 2)
    (item,) = [i for i in body["items"] if "ALPHA1" in i["content"]]
    assert item["team"] is None  # the direct share wins
    if goes == "direct":
        assert service.call("DELETE", f"/knowledge-bases/{world['alpha']}/members/bob", "bob").status == 204
    else:
        remove_member(service, "bob", TEAM)
    assert markers(recall(service)) == {"alpha", "bravo"}


# -- round trips ----------------------------------------------------------------------------------


def scope_reads(service, user: str) -> list[str]:
    """The DynamoDB reads of ``user``'s warm recall, in order (its limit counter's write left out)."""
    from tests.support.iam import record_aws_calls

    recall(service, user)  # warm: the MemOS key and the fleet's budget block are read once
    with record_aws_calls() as calls:
        recall(service, user)
    return [op for svc, op, _ in calls if svc == "dynamodb" and op != "UpdateItem"]


def test_recall_reads_two_times_without_a_team_and_four_with_any_number(service, world):
    register(service, "erin", "Erin")
    kb_with(service, "erin", "gamma")
    without = scope_reads(service, "erin")
    assert without == ["Query", "BatchGetItem", "Query"]  # the scope, the KBs' names, the scope again
    for n in range(5):
        make_team(service, f"tm_{n}", "alice", "erin")
        assert share_with_team(service, world["alpha"], f"tm_{n}").status == HTTPStatus.CREATED
    # The scope (a Query of erin's partition and a BatchGetItem of her five teams' META), the KBs' names,
    # the same two reads again after the search.
    assert scope_reads(service, "erin") == ["Query", "BatchGetItem", "BatchGetItem", "Query", "BatchGetItem"]


# -- a race ---------------------------------------------------------------------------------------

RACE_ITERATIONS = 15


def recall_during(service, change) -> tuple[int, dict[str, Any]]:
    """bob's recall, called on the handler, with ``change()`` landing while MemOS answers a search.

    The emulator runs ``change()`` once the first search has arrived and before it answers; in-process moto
    is not thread-safe, so it first waits for the recall's read of the KBs' names (made during the search)."""
    emulator, store = service.memos.emulator, get_kb_store()
    original, read_names = emulator.handle_api, store.batch_get_kbs_and_profiles
    names_read, pending, lock = threading.Event(), [change], threading.Lock()

    def reading_names(*args: Any, **kwargs: Any) -> Any:
        try:
            return read_names(*args, **kwargs)
        finally:
            names_read.set()

    def during_search(endpoint, headers, raw):
        with lock:
            if endpoint == SEARCH and pending:
                assert names_read.wait(timeout=30), "the recall never read the KBs' names"
                pending.pop()()
        return original(endpoint, headers, raw)

    store.batch_get_kbs_and_profiles = reading_names
    emulator.handle_api = during_search
    try:
        event = http_event("POST", "/recall", route="/recall", claims=claims_for("bob"), body={"query": QUERY})
        result = service.function_module("recall").lambda_handler(event, FakeLambdaContext(function_name="recall"))
    finally:
        emulator.handle_api = original
        del store.batch_get_kbs_and_profiles
    assert not pending, "the search never reached MemOS"
    return result["statusCode"], json.loads(result["body"])


def test_a_removal_during_the_search_drops_the_team_kbs_excerpts(service, world):
    assert markers(recall(service)) == {"alpha", "bravo"}  # the control: without the removal it is there
    leaked = 0
    for _ in range(RACE_ITERATIONS):
        status, body = recall_during(service, lambda: remove_member(service, "bob", TEAM))
        assert status == HTTPStatus.OK
        assert (body["scope_size"], body["discarded"], body["partial"]) == (2, True, False)
        assert {i["knowledge_base"]["id"] for i in body["items"]} == {world["bravo"]}
        leaked += "ALPHA1" in json.dumps(body, ensure_ascii=False)
        put_membership(service.stores.table, new_membership("bob", TEAM))
    assert leaked == 0

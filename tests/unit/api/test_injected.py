"""``memmy_kb.api.injected``: every router's routes take their caller and ports from ``Depends``, so a test
swaps them with ``app.dependency_overrides`` on the resolver that includes the router.

Each test builds the service's resolver, includes one real router and overrides the composition root's
factories with the in-memory fakes. The environment holds no table name and the composition root is
reset, so a route that still called a factory itself would fail (500) instead of reaching the fakes; the
answers also show data that only the fakes hold.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

import pytest
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from memmy_kb import composition
from memmy_kb.api.identity import current_caller_id
from memmy_kb.api.injected import recall_governor, share_policy
from memmy_kb.api.resolver import build_resolver
from memmy_kb.api.routes import (
    activity,
    blocks,
    deletion,
    files,
    knowledge_bases,
    members,
    profile,
    recall,
    uploads,
)
from memmy_kb.domain.recall.prints_cache import PrintsCache
from memmy_kb.domain.recall.rate_governor import RateGovernor
from memmy_kb.domain.recall.user_limit import RecallLimiter, RecallLimits
from memmy_kb.domain.sharing.limits import ShareLimits
from memmy_kb.domain.sharing.shares import SharePolicy
from memmy_kb.records import KbCapacity
from memmy_kb.settings import Settings, get_settings
from tests.support.events import FakeLambdaContext, claims_for, http_event
from tests.support.factories import (
    folder_record,
    kb_record,
    owner_grant_for,
    profile_record,
    reader_grant_for,
)
from tests.support.fakes import FakeKnowledgeEngine, FakeStores, fake_stores
from tests.support.fakes.recall_files import FakeRecallFiles

SETTINGS = Settings(table_name="only-the-fakes", memos_base_url="http://127.0.0.1:9", memos_api_key_secret="")
# Ports a route receives but the request under test never reaches: anything that is called fails loudly.
UNUSED: Any = object()


@dataclass
class Intents:
    """Enough of the create intents for a create: it notes the intents it is given."""

    created: list[str] = field(default_factory=list)

    def put_create_intent(self, kb_id: str, *args: Any, **kwargs: Any) -> None:
        self.created.append(kb_id)

    def abandon_create(self, kb_id: str, **kwargs: Any) -> None:
        raise AssertionError(f"the create of {kb_id} was abandoned")


@dataclass
class World:
    """kb_1 owned by alice (folder fo_1 in it, memory in MemOS), read by bob; both have profiles."""

    stores: FakeStores
    memos: FakeKnowledgeEngine
    intents: Intents

    def overrides(self) -> dict[Callable[..., Any], Callable[..., Any]]:
        policy = SharePolicy(self.stores.counters, ShareLimits(attempts=10, window_seconds=60, members_per_day=10), 1)
        return {
            get_settings: lambda: SETTINGS,
            composition.get_kb_store: lambda: self.stores.kbs,
            composition.get_content_store: lambda: self.stores.contents,
            composition.get_profile_store: lambda: self.stores.profiles,
            composition.get_activity_log: lambda: self.stores.activity,
            composition.get_memos_client: lambda: self.memos,
            composition.get_recall_memos_client: lambda: self.memos,
            composition.get_recall_files: FakeRecallFiles,
            composition.get_prints_cache: PrintsCache,
            # This environment's governor alone: the fleet's budget lives in the table, which these fakes are not.
            recall_governor: lambda settings: RateGovernor(),
            composition.get_create_intents: lambda: self.intents,
            composition.get_backend_slots: lambda: self.stores.slots,
            composition.get_cleanup_store: lambda: UNUSED,
            composition.get_cleanup_executions: lambda: UNUSED,
            composition.get_upload_storage: lambda: UNUSED,
            share_policy: lambda settings: policy,
            composition.get_kb_capacity: lambda: KbCapacity(max_files=10, max_bytes=1024),
            composition.get_recall_limiter: lambda: RecallLimiter(RecallLimits()),
            composition.get_rate_counters: lambda: self.stores.counters,
        }


@pytest.fixture(autouse=True)
def no_real_adapters(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # A factory called directly would read TABLE_NAME first and fail: the route must not get that far.
    monkeypatch.delenv("TABLE_NAME", raising=False)
    composition.reset_composition()
    yield
    composition.reset_composition()


@pytest.fixture
def world() -> World:
    stores = fake_stores()
    memos = FakeKnowledgeEngine()
    memos_kb_id = memos.create_knowledgebase("memmy:kb_1")
    memos.add_memory(memos_kb_id, "差旅报销制度", "住宿发票和行程单", score=0.9)
    kb = kb_record("kb_1", owner_id="alice", member_count=1, memos_kb_id=memos_kb_id)
    stores.table.seed(
        kb,
        owner_grant_for(kb),
        reader_grant_for(kb, "bob"),
        folder_record("fo_1", kb_id="kb_1", name="发票"),
        profile_record("alice", display_name="Alice"),
        profile_record("bob", display_name="Bob"),
    )
    return World(stores, memos, Intents())


def call(
    router: APIGatewayHttpRouter,
    overrides: dict[Callable[..., Any], Callable[..., Any]],
    method: str,
    path: str,
    user: str | None = "alice",
    body: Any = None,
) -> tuple[int, Any]:
    """``method path`` as ``user`` on a resolver that includes ``router`` and has ``overrides`` set."""
    app = build_resolver()
    app.include_router(router)
    app.dependency_overrides.update(overrides)
    event = http_event(method, path, claims=claims_for(user) if user else None, body=body)
    reply = app.resolve(event, FakeLambdaContext())
    return reply["statusCode"], json.loads(reply["body"]) if reply.get("body") else None


def test_the_kb_list_reads_the_overridden_stores(world: World) -> None:
    status, body = call(knowledge_bases.router, world.overrides(), "GET", "/knowledge-bases", "bob")
    assert status == HTTPStatus.OK, body
    assert [(kb["id"], kb["owner"]["display_name"]) for kb in body["items"]] == [("kb_1", "Alice")]


def test_a_create_goes_to_the_overridden_memos_stores_and_intents(world: World) -> None:
    status, body = call(knowledge_bases.creation, world.overrides(), "POST", "/knowledge-bases", body={"name": "新"})
    assert status == HTTPStatus.CREATED, body
    assert world.intents.created == [body["id"]]
    assert world.stores.kbs.get_kb(body["id"]) is not None
    assert len(world.memos.knowledge_bases) == 2


def test_the_file_list_reads_the_overridden_stores(world: World) -> None:
    status, body = call(files.router, world.overrides(), "GET", "/knowledge-bases/kb_1/files", "bob")
    assert status == HTTPStatus.OK, body
    assert [folder["name"] for folder in body["folders"]] == ["发票"]


def test_put_me_registers_in_the_overridden_profile_store(world: World) -> None:
    status, body = call(profile.router, world.overrides(), "PUT", "/me", "dave")
    assert status == HTTPStatus.OK, body
    assert world.stores.profiles.get_profile("dave") is not None


def test_the_activity_log_is_the_overridden_one(world: World) -> None:
    status, body = call(activity.router, world.overrides(), "GET", "/knowledge-bases/kb_1/activity")
    assert status == HTTPStatus.OK, body
    assert body["items"] == []


def test_the_member_list_reads_the_overridden_stores(world: World) -> None:
    status, body = call(members.router, world.overrides(), "GET", "/knowledge-bases/kb_1/members")
    assert status == HTTPStatus.OK, body
    assert {m["user_id"] for m in body["items"]} == {"alice", "bob"}


def test_the_block_list_reads_the_overridden_profile_store(world: World) -> None:
    status, body = call(blocks.router, world.overrides(), "GET", "/me/blocked", "bob")
    assert status == HTTPStatus.OK, body
    assert body["items"] == []


def test_a_reader_deleting_is_refused_by_the_overridden_kb_store(world: World) -> None:
    status, body = call(deletion.router, world.overrides(), "DELETE", "/knowledge-bases/kb_1/folders/fo_1", "bob")
    assert (status, body["error"]["code"]) == (HTTPStatus.FORBIDDEN, "owner_only")


def test_recall_searches_the_overridden_memos_client(world: World) -> None:
    status, body = call(recall.router, world.overrides(), "POST", "/recall", "bob", body={"query": "发票"})
    assert status == HTTPStatus.OK, body
    assert [search.kb_ids for search in world.memos.searches] == [(world.stores.kbs.get_kb("kb_1").memos_kb_id,)]
    assert "住宿发票" in body["context"]


def test_a_reader_uploading_is_refused_by_the_overridden_kb_store(world: World) -> None:
    upload = {"filename": "a.txt", "size_bytes": 10, "content_type": "text/plain"}
    status, body = call(uploads.router, world.overrides(), "POST", "/knowledge-bases/kb_1/uploads", "bob", upload)
    assert (status, body["error"]["code"]) == (HTTPStatus.FORBIDDEN, "owner_only")


def test_the_caller_is_a_dependency_too(world: World) -> None:
    # Given no login claims at all, but the caller provider overridden
    overrides = {**world.overrides(), current_caller_id: lambda: "bob"}
    status, body = call(knowledge_bases.router, overrides, "GET", "/knowledge-bases", user=None)
    assert status == HTTPStatus.OK, body
    assert [kb["id"] for kb in body["items"]] == ["kb_1"]


def test_without_claims_the_caller_provider_answers_401(world: World) -> None:
    # What the provider raises is answered as if the route had raised it: the error shape, not a 500.
    status, body = call(knowledge_bases.router, world.overrides(), "GET", "/knowledge-bases", user=None)
    assert (status, body["error"]["code"]) == (HTTPStatus.UNAUTHORIZED, "unauthorized")

"""Recall over HTTP on the running local stack, and ``memmy-kb recall`` with the cloud login.

The agent hooks go through the local service: tests/e2e/test_desktop_e2e.py runs them as the agents do.

Documents are put straight into the emulator here (the seed story in test_seed_story_e2e.py goes through
uploads); the MemOS id of a KB is found by the name the service gives it in MemOS, ``memmy:<kb_id>``.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from http import HTTPStatus
from typing import Any

import httpx
import pytest

from memmy_local.memos_emulator.config import DEFAULT_API_KEY
from tests.support.polling import wait_until
from tests.support.stack import CLI, RunningStack

pytestmark = pytest.mark.e2e

MARKER = "DELTA4"
DOCUMENT = (
    "# 差旅报销制度\n差旅报销需要哪些发票：住宿发票、机票行程单和出租车发票。"
    f"{MARKER} 住宿发票须为增值税专用发票，每晚不超过 500 元。"
)
QUESTION = "差旅报销需要哪些发票"
EVENT = {
    "session_id": "e2e-session",
    "transcript_path": "/tmp/transcript.jsonl",
    "cwd": "/work",
    "hook_event_name": "UserPromptSubmit",
    "prompt": QUESTION,
}


def api(stack: RunningStack, user: str, **claims: Any) -> httpx.Client:
    token = stack.token(user, **claims)
    return httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def memos_kb_id(stack: RunningStack, kb_id: str) -> str:
    state = httpx.get(f"{stack.memos_url}/_emulator/state", timeout=10).json()
    (found,) = [kb["id"] for kb in state["knowledge_bases"] if kb["name"] == f"memmy:{kb_id}"]
    return found


def add_document(stack: RunningStack, kb_id: str, filename: str, text: str) -> None:
    """Put a document into the KB's MemOS KB directly and wait until it is searchable."""
    from memmy_kb.adapters.memos.client import MemosClient
    from memmy_kb.adapters.memos.key import StaticApiKeyProvider
    from memmy_kb.domain.engine import FileInput

    target = memos_kb_id(stack, kb_id)
    with MemosClient(stack.memos_api_url, StaticApiKeyProvider(DEFAULT_API_KEY)) as client:
        (added,) = client.add_knowledgebase_files(
            target, [FileInput.from_bytes(text.encode(), name=filename, mime_type="text/markdown")]
        )
        wait_until(
            lambda: client.get_knowledgebase_files([added.id])[0].status.value == "available",
            timeout=20,
            message="the document to be processed",
        )


def user_with_the_document(stack: RunningStack, user: str, name: str) -> str:
    """Make ``user`` one KB that holds the travel-expense document."""
    with api(stack, user, name=name) as client:
        created = client.post("/knowledge-bases", json={"name": "财务制度"})
        assert created.status_code == HTTPStatus.CREATED, created.text
    add_document(stack, created.json()["id"], "差旅报销制度.md", DOCUMENT)
    return user


@pytest.fixture(scope="module")
def reader(local_stack: RunningStack) -> str:
    """A user whose one KB holds the travel-expense document."""
    return user_with_the_document(local_stack, f"reader-{uuid.uuid4().hex[:8]}", "Reader")


def test_recall_with_a_token_returns_the_excerpts_and_the_context(local_stack, reader):
    with api(local_stack, reader) as client:
        reply = client.post("/recall", json={"query": QUESTION, "limit": 5})

    assert reply.status_code == HTTPStatus.OK, reply.text
    body = reply.json()
    assert set(body) == {"items", "context", "scope_size", "discarded", "partial"}
    assert (body["scope_size"], body["discarded"], body["partial"]) == (1, False, False)
    (item,) = body["items"]
    assert item["title"] == "差旅报销制度"
    assert item["knowledge_base"]["name"] == "财务制度"
    assert item["owner"] is None
    assert MARKER in item["content"]
    assert isinstance(item["score"], float)
    assert item["content"] in body["context"]
    assert "《差旅报销制度》" in body["context"]
    assert "不是指令" in body["context"]


def test_recall_without_a_token_is_401(local_stack):
    reply = httpx.post(f"{local_stack.api_url}/recall", json={"query": QUESTION}, timeout=10)
    assert reply.status_code == HTTPStatus.UNAUTHORIZED


def test_a_user_without_knowledge_bases_gets_an_empty_context(local_stack):
    with api(local_stack, f"nobody-{uuid.uuid4().hex[:8]}") as client:
        reply = client.post("/recall", json={"query": QUESTION})
    assert reply.json() == {"items": [], "context": "", "scope_size": 0, "discarded": False, "partial": False}


def test_the_recall_command_shows_titles_and_scores(local_stack, reader, tmp_path):
    env = {
        **os.environ,
        "MEMMY_KB_ENDPOINT": local_stack.api_url,
        "MEMMY_KB_TOKEN": local_stack.token(reader),
        "MEMMY_KB_HOME": str(tmp_path),
    }
    shown = subprocess.run(  # noqa: S603 - our own CLI
        [*CLI, "recall", QUESTION, "--limit", "3"], capture_output=True, text=True, env=env, timeout=60
    )
    as_json = subprocess.run(  # noqa: S603 - our own CLI
        [*CLI, "recall", QUESTION, "--json"], capture_output=True, text=True, env=env, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    assert "[1] 《差旅报销制度》  (score " in shown.stdout
    assert "    from: 财务制度 (kb_" in shown.stdout
    assert MARKER in shown.stdout
    assert json.loads(as_json.stdout)["items"][0]["title"] == "差旅报销制度"


def _add_all(stack: RunningStack, documents: dict[str, str]) -> None:
    """Put one document in each KB (by KB id) straight into MemOS, then wait until all are searchable."""
    from memmy_kb.adapters.memos.client import MemosClient
    from memmy_kb.adapters.memos.key import StaticApiKeyProvider
    from memmy_kb.domain.engine import FileInput

    with MemosClient(stack.memos_api_url, StaticApiKeyProvider(DEFAULT_API_KEY)) as client:
        added = [
            client.add_knowledgebase_files(
                memos_kb_id(stack, kb_id), [FileInput.from_bytes(text.encode(), name="制度.md", mime_type="text/markdown")]
            )[0].id
            for kb_id, text in documents.items()
        ]
        wait_until(
            lambda: all(f.status.value == "available" for f in client.get_knowledgebase_files(added)),
            timeout=20,
            message="the documents to be processed",
        )


def _marker_kb(item: dict[str, Any], markers: dict[str, str]) -> str:
    (kb_id,) = [kb for kb, marker in markers.items() if marker in item["content"]]
    return kb_id


def test_every_excerpt_names_its_kb_and_a_revoked_share_comes_back_no_more(local_stack):
    tag = uuid.uuid4().hex[:8]
    owner, reader = f"sharer-{tag}", f"asker-{tag}"
    with api(local_stack, owner, name="Olivia") as olivia, api(local_stack, reader, name="Rita") as rita:
        for client in (olivia, rita):
            assert client.put("/me").status_code == HTTPStatus.OK
        shared = olivia.post("/knowledge-bases", json={"name": "销售资料"}).json()["id"]
        mine = rita.post("/knowledge-bases", json={"name": "我的笔记"}).json()["id"]
        shared_reply = olivia.post(f"/knowledge-bases/{shared}/members", json={"identifier": reader})
        assert shared_reply.status_code == HTTPStatus.CREATED, shared_reply.text
        # A third user with 10 KBs: past RECALL_MAX_SEARCHES (4), the rest are searched as one group
        many = [olivia.post("/knowledge-bases", json={"name": f"资料{i}"}).json()["id"] for i in range(10)]
        markers = {shared: f"SH{tag}", mine: f"MY{tag}", **{kb: f"K{i}X{tag}" for i, kb in enumerate(many)}}
        _add_all(local_stack, {kb: f"{DOCUMENT} {marker}" for kb, marker in markers.items()})

        body = rita.post("/recall", json={"query": QUESTION, "limit": 5}).json()
        by_kb = {_marker_kb(item, markers): item for item in body["items"]}
        assert set(by_kb) == {shared, mine}
        assert by_kb[mine]["knowledge_base"] == {"id": mine, "name": "我的笔记"}
        assert by_kb[mine]["owner"] is None
        assert by_kb[shared]["knowledge_base"] == {"id": shared, "name": "销售资料"}
        assert by_kb[shared]["owner"]["name"] == "Olivia"
        assert "「销售资料」（共享者 shared by: Olivia" in body["context"]

        assert olivia.delete(f"/knowledge-bases/{shared}/members/{reader}").status_code == HTTPStatus.NO_CONTENT
        after = rita.post("/recall", json={"query": QUESTION, "limit": 5}).json()
        assert {_marker_kb(item, markers) for item in after["items"]} == {mine}
        assert markers[shared] not in json.dumps(after, ensure_ascii=False)

        wide = olivia.post("/recall", json={"query": QUESTION, "limit": 25}).json()
    assert wide["scope_size"] == 11
    assert wide["items"], wide
    named_alone = set()
    for item in wide["items"]:
        kb = _marker_kb(item, markers)
        if item["knowledge_base"] is not None:
            assert item["knowledge_base"]["id"] == kb
            named_alone.add(kb)
        else:
            assert kb in {k["id"] for k in item["knowledge_bases"]}
    # At most RECALL_MAX_SEARCHES - 1 KBs are searched alone; the group names the other eight
    assert 1 <= len(named_alone) <= 3
    assert any(item["knowledge_bases"] and len(item["knowledge_bases"]) == 8 for item in wide["items"])

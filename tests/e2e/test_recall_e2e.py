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

from memmy_local.memos_emulator.server import DEFAULT_API_KEY
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
    assert set(body) == {"items", "context", "scope_size", "discarded"}
    assert (body["scope_size"], body["discarded"]) == (1, False)
    (item,) = body["items"]
    assert item["title"] == "差旅报销制度"
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
    assert reply.json() == {"items": [], "context": "", "scope_size": 0, "discarded": False}


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
    assert MARKER in shown.stdout
    assert json.loads(as_json.stdout)["items"][0]["title"] == "差旅报销制度"

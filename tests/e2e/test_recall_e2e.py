"""Recall over HTTP on the stage, and ``memmy-kb recall`` with the cloud login.

The agent hooks go through the local service: tests/e2e/test_desktop_e2e.py runs them as the agents do.

On the local stack documents are put straight into the emulator here (the seed story in
test_seed_story_e2e.py goes through uploads); the MemOS id of a KB is found by the name the service gives
it in MemOS, ``memmy:<kb_id>``. On a deployed stage they are uploaded.
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

from tests.support.e2e_recall import (
    DOCUMENT,
    KB_NAME,
    MARKER,
    QUESTION,
    add_documents,
    api,
    user_with_the_document,
)
from tests.support.stack import CLI
from tests.support.stage import Stage, StageUser

pytestmark = pytest.mark.e2e

EVENT = {
    "session_id": "e2e-session",
    "transcript_path": "/tmp/transcript.jsonl",
    "cwd": "/work",
    "hook_event_name": "UserPromptSubmit",
    "prompt": QUESTION,
}


@pytest.fixture(scope="module")
def reader(stage: Stage) -> StageUser:
    """A user whose one KB holds the travel-expense document."""
    return user_with_the_document(stage, f"reader-{uuid.uuid4().hex[:8]}", "Reader")


def test_recall_with_a_token_returns_the_excerpts_and_the_context(stage, reader):
    with api(stage, reader.token) as client:
        reply = client.post("/recall", json={"query": QUESTION, "limit": 5})

    assert reply.status_code == HTTPStatus.OK, reply.text
    body = reply.json()
    assert set(body) == {"items", "context", "scope_size", "discarded", "partial"}
    assert (body["scope_size"], body["discarded"], body["partial"]) == (1, False, False)
    (item,) = body["items"]
    assert item["title"] == "差旅报销制度"
    assert item["knowledge_base"]["name"] == stage.kb_name(KB_NAME)
    assert item["owner"] is None
    assert MARKER in item["content"]
    assert isinstance(item["score"], float)
    assert item["content"] in body["context"]
    assert "《差旅报销制度》" in body["context"]
    assert "不是指令" in body["context"]


def test_recall_without_a_token_is_401(stage):
    reply = httpx.post(f"{stage.api_url}/recall", json={"query": QUESTION}, timeout=10)
    assert reply.status_code == HTTPStatus.UNAUTHORIZED


def test_a_user_without_knowledge_bases_gets_an_empty_context(stage):
    with api(stage, stage.user(f"nobody-{uuid.uuid4().hex[:8]}").token) as client:
        reply = client.post("/recall", json={"query": QUESTION})
    assert reply.json() == {"items": [], "context": "", "scope_size": 0, "discarded": False, "partial": False}


def test_the_recall_command_shows_titles_and_scores(stage, reader, tmp_path):
    env = {
        **os.environ,
        "MEMMY_KB_ENDPOINT": stage.api_url,
        "MEMMY_KB_TOKEN": reader.token,
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
    assert f"    from: {stage.kb_name(KB_NAME)} (kb_" in shown.stdout
    assert MARKER in shown.stdout
    assert json.loads(as_json.stdout)["items"][0]["title"] == "差旅报销制度"


def _marker_kb(item: dict[str, Any], markers: dict[str, str]) -> str:
    (kb_id,) = [kb for kb, marker in markers.items() if marker in item["content"]]
    return kb_id


def test_every_excerpt_names_its_kb_and_a_revoked_share_comes_back_no_more(stage):
    # Given Rita's own KB, one Olivia shares with her, and ten more of Olivia's, each with a marked document
    tag = uuid.uuid4().hex[:8]
    owner = stage.user(f"sharer-{tag}", name="Olivia")
    asker = stage.user(f"asker-{tag}", name="Rita")
    reader = asker.user_id
    with api(stage, owner.token) as olivia, api(stage, asker.token) as rita:
        for client in (olivia, rita):
            assert client.put("/me").status_code == HTTPStatus.OK
        shared = olivia.post("/knowledge-bases", json={"name": stage.kb_name("销售资料")}).json()["id"]
        mine = rita.post("/knowledge-bases", json={"name": stage.kb_name("我的笔记")}).json()["id"]
        shared_reply = olivia.post(f"/knowledge-bases/{shared}/members", json={"identifier": reader})
        assert shared_reply.status_code == HTTPStatus.CREATED, shared_reply.text
        # Ten more KBs of Olivia's: one search for her eleven
        many = [
            olivia.post("/knowledge-bases", json={"name": stage.kb_name(f"资料{i}")}).json()["id"]
            for i in range(10)
        ]
        markers = {shared: f"SH{tag}", mine: f"MY{tag}", **{kb: f"K{i}X{tag}" for i, kb in enumerate(many)}}
        tokens = {kb: (asker if kb == mine else owner).token for kb in markers}
        # Each document mostly its own words, so that its text names its file (DOCUMENT alone would be
        # boilerplate in eleven files: candidates, no one file)
        documents = {kb: (tokens[kb], "制度.md", _own_words(marker)) for kb, marker in markers.items()}
        add_documents(stage, documents, uploaded=True)

        # When Rita asks, then each excerpt names its file and KB, and a share its owner
        body = rita.post("/recall", json={"query": QUESTION, "limit": 5}).json()
        by_kb = {_marker_kb(item, markers): item for item in body["items"]}
        assert set(by_kb) == {shared, mine}
        assert by_kb[mine]["knowledge_base"] == {"id": mine, "name": stage.kb_name("我的笔记")}
        assert by_kb[mine]["owner"] is None
        assert (by_kb[mine]["file"]["name"], by_kb[mine]["file"]["knowledge_base_id"]) == ("制度.md", mine)
        assert by_kb[shared]["knowledge_base"] == {"id": shared, "name": stage.kb_name("销售资料")}
        assert by_kb[shared]["owner"]["name"] == "Olivia"
        assert f"「{stage.kb_name('销售资料')}」（共享者 shared by: Olivia" in body["context"]

        # When Olivia revokes the share, then Rita's next recall has nothing from it
        assert olivia.delete(f"/knowledge-bases/{shared}/members/{reader}").status_code == HTTPStatus.NO_CONTENT
        after = rita.post("/recall", json={"query": QUESTION, "limit": 5}).json()
        assert {_marker_kb(item, markers) for item in after["items"]} == {mine}
        assert markers[shared] not in json.dumps(after, ensure_ascii=False)

        # When Olivia asks over her eleven KBs
        wide = olivia.post("/recall", json={"query": QUESTION, "limit": 25}).json()
    # Then every excerpt names its own KB, by its file (one search covered them all)
    assert wide["scope_size"] == 11
    assert len(wide["items"]) == 11, wide
    for item in wide["items"]:
        kb = _marker_kb(item, markers)
        assert item["knowledge_base"]["id"] == kb
        assert (item["file"]["knowledge_base_id"], item["file"]["name"]) == (kb, "制度.md")


def _own_words(marker: str) -> str:
    """The question's answer, then words of this document alone."""
    words = " ".join(uuid.uuid4().hex[:6] for _ in range(30))
    return f"{DOCUMENT} {marker} {words}"


def test_one_users_recalls_past_the_limit_are_429_with_retry_after_and_anothers_still_answer(stage):
    """The per-user recall limit over HTTP, as deployed (template.yaml's defaults: a burst of 10, then 2 a
    second): one user recalling back to back is refused with 429 ``recall_rate_limited`` and
    ``Retry-After``; another user's recall is answered with its excerpts all the while."""
    heavy = user_with_the_document(stage, f"heavy-{uuid.uuid4().hex[:8]}", "Heavy")
    light = user_with_the_document(stage, f"light-{uuid.uuid4().hex[:8]}", "Light")
    with api(stage, heavy.token) as client:
        replies = [client.post("/recall", json={"query": QUESTION}) for _ in range(40)]
    statuses = [reply.status_code for reply in replies]
    assert set(statuses) == {HTTPStatus.OK, HTTPStatus.TOO_MANY_REQUESTS}, statuses
    # The burst is served whole before any refusal
    assert statuses[:10] == [HTTPStatus.OK] * 10
    for refused in (r for r in replies if r.status_code == HTTPStatus.TOO_MANY_REQUESTS):
        error = refused.json()["error"]
        assert error["code"] == "recall_rate_limited"
        assert error["details"] == {"retry_after_seconds": int(refused.headers["Retry-After"])}
        assert 1 <= int(refused.headers["Retry-After"]) <= 10
    with api(stage, light.token) as client:
        reply = client.post("/recall", json={"query": QUESTION})
    assert reply.status_code == HTTPStatus.OK, reply.text
    assert MARKER in reply.json()["context"]

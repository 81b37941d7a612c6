"""The recall tests' person and document on the stage: a user whose one KB ("财务制度") holds the
travel-expense document (its ``MARKER`` shows in an excerpt). On the local stack documents are put
straight into the emulator (the MemOS id of a KB found by the name the service gives it there,
``memmy:<kb_id>``); on a deployed stage they are uploaded."""

from __future__ import annotations

from http import HTTPStatus

import httpx

from memmy_local.memos_emulator.config import DEFAULT_API_KEY
from tests.support.e2e_story import client as api
from tests.support.e2e_story import upload, wait_until_available
from tests.support.polling import wait_until
from tests.support.stack import RunningStack
from tests.support.stage import Stage, StageUser

__all__ = ["add_documents", "api", "memos_kb_id", "user_with_the_document"]

MARKER = "DELTA4"
DOCUMENT = (
    "# 差旅报销制度\n差旅报销需要哪些发票：住宿发票、机票行程单和出租车发票。"
    f"{MARKER} 住宿发票须为增值税专用发票，每晚不超过 500 元。"
)
FILENAME = "差旅报销制度.md"
KB_NAME = "财务制度"
QUESTION = "差旅报销需要哪些发票"


def memos_kb_id(stack: RunningStack, kb_id: str) -> str:
    state = httpx.get(f"{stack.memos_url}/_emulator/state", timeout=10).json()
    found: str
    (found,) = [kb["id"] for kb in state["knowledge_bases"] if kb["name"] == f"memmy:{kb_id}"]
    return found


def add_documents(stage: Stage, documents: dict[str, tuple[str, str, str]], *, uploaded: bool = False) -> None:
    """One document in each KB (``{kb_id: (its owner's token, file name, text)}``), then wait until all
    are searchable: put straight into the emulator's MemOS on the local stack, uploaded on a deployed one
    (and on the local stack too with ``uploaded``: the ingest then records each file, and the fingerprints
    recall names it by)."""
    if stage.local is None or uploaded:
        for kb_id, (token, filename, text) in documents.items():
            with api(stage, token) as client:
                upload(client, kb_id, filename, text)
        for kb_id, (token, filename, _) in documents.items():
            with api(stage, token) as client:
                wait_until_available(client, kb_id, {filename})
        return
    from memmy_kb.adapters.memos.client import MemosClient
    from memmy_kb.adapters.memos.key import StaticApiKeyProvider
    from memmy_kb.domain.engine import FileInput

    local = stage.local
    with MemosClient(local.memos_api_url, StaticApiKeyProvider(DEFAULT_API_KEY)) as client:
        added = [
            client.add_knowledgebase_files(
                memos_kb_id(local, kb_id),
                [FileInput.from_bytes(text.encode(), name=filename, mime_type="text/markdown")],
            )[0].id
            for kb_id, (_, filename, text) in documents.items()
        ]
        wait_until(
            lambda: all(f.status.value == "available" for f in client.get_knowledgebase_files(added)),
            timeout=20,
            message="the documents to be processed",
        )


def user_with_the_document(stage: Stage, name: str, display_name: str) -> StageUser:
    """A new person whose one KB ("财务制度") holds the travel-expense document."""
    user = stage.user(name, name=display_name)
    with api(stage, user.token) as client:
        created = client.post("/knowledge-bases", json={"name": stage.kb_name(KB_NAME)})
        assert created.status_code == HTTPStatus.CREATED, created.text
    add_documents(stage, {created.json()["id"]: (user.token, FILENAME, DOCUMENT)})
    return user

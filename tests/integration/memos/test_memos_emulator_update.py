"""The emulator's ``/update/knowledgebase-file``, over raw HTTP: a file's next version under the same id
(docs/memos.md, "Updating a file": what MemOS documents, and what we assume of the rest)."""

from __future__ import annotations

from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

import httpx
import pytest

from tests.support.emulator_api import add_md, code_of, create_kb, data_url, ok, search, wait_done

UPDATE = "/update/knowledgebase-file"


@pytest.fixture
def http(memos_emulator: Any) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=memos_emulator.base_url,
        headers={"Authorization": f"Token {memos_emulator.api_key}"},
        timeout=30,
    ) as client:
        yield client


@pytest.fixture
def api(http: httpx.Client) -> Any:
    def call(endpoint: str, body: Any, **kwargs: Any) -> httpx.Response:
        return http.post(endpoint, json=body, **kwargs)

    return call


def update_md(api: Any, file_id: str, name: str, text: str) -> dict[str, Any]:
    data: dict[str, Any] = ok(api(UPDATE, {"file_id": file_id, "file": {"name": name, "content": data_url(text.encode())}}))
    return data


def words(api: Any, kb_id: str, query: str) -> list[str]:
    return [hit["memory_value"] for hit in search(api, [kb_id], query, relativity=0)]


def test_an_update_is_the_next_version_under_the_same_id_and_switches_search_when_processed(api, memos_emulator):
    # Given a processed file whose text answers a search
    kb_id = create_kb(api)
    file_id = add_md(api, kb_id, "price.md", "# 价目表\n旧价格 penguin 一百元")
    wait_done(api, [file_id])
    # When its next version arrives while processing is held
    memos_emulator.pause_processing()
    updated = update_md(api, file_id, "price.md", "# 价目表\n新价格 walrus 两百元")
    # Then the reply names the same file, running, at version 2
    assert (updated["id"], updated["status"], updated["version"]) == (file_id, "running", 2)
    files = ok(api("/get/knowledgebase-file", {"file_ids": [file_id]}))["file_detail_list"]
    assert [(f["id"], f["status"]) for f in files] == [(file_id, "running")]
    # and the old version still answers, the new one not yet
    assert any("penguin" in w for w in words(api, kb_id, "penguin"))
    assert words(api, kb_id, "walrus") == []
    # When it is processed, only the new version answers
    memos_emulator.pause_processing(False)
    assert wait_done(api, [file_id])[0]["status"] == "completed"
    assert words(api, kb_id, "penguin") == []
    assert any("walrus" in w for w in words(api, kb_id, "walrus"))
    listed = ok(api("/get/knowledgebase-file", {"knowledgebase_id": kb_id}))
    assert listed["total"] == 1
    assert memos_emulator.state()["knowledge_bases"][0]["files"][0]["version"] == 2


def test_a_version_that_fails_leaves_the_previous_one_answering(api):
    kb_id = create_kb(api)
    file_id = add_md(api, kb_id, "a.md", "# A\npenguin facts")
    wait_done(api, [file_id])
    broken = "data:application/pdf;base64," + data_url(b"not a pdf").split(",", 1)[1]
    ok(api(UPDATE, {"file_id": file_id, "file": {"name": "a.pdf", "content": broken}}))
    [file] = wait_done(api, [file_id])
    assert file["status"] == "failed"
    assert file["fail_reason"]
    assert any("penguin" in w for w in words(api, kb_id, "penguin"))


def test_a_multipart_update_is_the_same_as_a_json_one(http, api):
    kb_id = create_kb(api)
    file_id = add_md(api, kb_id, "a.md", "# A\npenguin facts")
    wait_done(api, [file_id])
    reply = http.post(UPDATE, data={"file_id": file_id}, files={"file": ("a.md", b"# A\nwalrus facts", "text/markdown")})
    assert ok(reply)["id"] == file_id
    wait_done(api, [file_id])
    assert words(api, kb_id, "penguin") == []
    assert any("walrus" in w for w in words(api, kb_id, "walrus"))


def test_a_later_update_supersedes_one_still_waiting(api, memos_emulator):
    kb_id = create_kb(api)
    file_id = add_md(api, kb_id, "a.md", "# A\npenguin facts")
    wait_done(api, [file_id])
    memos_emulator.pause_processing()
    update_md(api, file_id, "a.md", "# A\nwalrus facts")
    assert update_md(api, file_id, "a.md", "# A\nbadger facts")["version"] == 3
    memos_emulator.pause_processing(False)
    wait_done(api, [file_id])
    assert words(api, kb_id, "walrus") == []
    assert words(api, kb_id, "penguin") == []
    assert any("badger" in w for w in words(api, kb_id, "badger"))


def test_deleting_a_file_while_its_next_version_waits_removes_every_version(api, memos_emulator):
    kb_id = create_kb(api)
    file_id = add_md(api, kb_id, "a.md", "# A\npenguin facts")
    wait_done(api, [file_id])
    memos_emulator.pause_processing()
    update_md(api, file_id, "a.md", "# A\nwalrus facts")
    ok(api("/delete/knowledgebase-file", {"file_ids": [file_id]}))
    memos_emulator.pause_processing(False)
    assert words(api, kb_id, "penguin") == []
    assert words(api, kb_id, "walrus") == []
    assert code_of(api(UPDATE, {"file_id": file_id, "file": {"name": "a.md", "content": data_url(b"x")}})) == 40001


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"file": {"name": "a.md", "content": data_url(b"x")}}, 40002),
        ({"file_id": "0" * 32, "file": {"name": "a.md", "content": data_url(b"x")}}, 40001),
        ({"file_id": "0" * 32}, 40002),
        ({"file_id": "0" * 32, "file": [{"name": "a.md", "content": data_url(b"x")}]}, 40000),
        ({"file_id": "0" * 32, "file": {"name": "a.exe", "content": data_url(b"x")}}, 50107),
        ({"file_id": "0" * 32, "file": {"name": "a.md", "content": "data:text/markdown;base64,***"}}, 40008),
    ],
    ids=["no file id", "unknown file", "no file", "a list", "disallowed format", "bad base64"],
)
def test_update_errors(api, body, code):
    assert code_of(api(UPDATE, body)) == code


def test_a_file_of_another_project_is_not_found(api, memos_emulator):
    kb_id = create_kb(api)
    file_id = add_md(api, kb_id, "a.md", "# A\npenguin facts")
    with httpx.Client(
        base_url=memos_emulator.base_url, headers={"Authorization": f"Token {memos_emulator.other_project_key}"}
    ) as theirs:
        reply = theirs.post(UPDATE, json={"file_id": file_id, "file": {"name": "a.md", "content": data_url(b"x")}})
    assert (reply.status_code, code_of(reply)) == (HTTPStatus.OK, 40001)

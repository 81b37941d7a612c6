"""The emulator's checkpoint and restore, and the test checkpoint built on them (tests/support/checkpoint.py):
what a test built comes back whole after the stack has been emptied, and files still processing when it
was taken are processed once it is back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from tests.support import checkpoint, seed
from tests.support.aws import _reset_stack, physical_names
from tests.support.emulator_api import Api, add_md, api_client, create_kb, search, wait_done
from tests.support.uploads import create_kb as create_memmy_kb


@pytest.fixture
def api(memos_emulator: Any) -> Iterator[Api]:
    with api_client(memos_emulator.base_url, memos_emulator.api_key) as call:
        yield call


def test_a_restored_emulator_holds_what_it_held_and_processes_what_was_pending(api, memos_emulator):
    # Given a KB with a processed file and a second file still waiting to be processed
    kb_id = create_kb(api)
    done = add_md(api, kb_id, "old.md", "# 旧\npenguin 旧内容")
    wait_done(api, [done])
    memos_emulator.pause_processing()
    pending = add_md(api, kb_id, "new.md", "# 新\nwalrus 新内容")
    before = memos_emulator.state()["knowledge_bases"]
    saved = memos_emulator.emulator.checkpoint()
    # When everything is forgotten (processing resumes), then put back
    memos_emulator.emulator.reset()
    assert memos_emulator.state()["knowledge_bases"] == []
    memos_emulator.emulator.restore(saved)
    # Then it holds the same KB and files, the processed one answers, and the pending one is processed
    assert memos_emulator.state()["knowledge_bases"] == before
    assert [hit["memory_value"] for hit in search(api, [kb_id], "penguin", relativity=0)]
    assert wait_done(api, [pending])[0]["status"] == "completed"
    assert [hit["memory_value"] for hit in search(api, [kb_id], "walrus", relativity=0)]


def _items(service: Any) -> list[list[tuple[str, str]]]:
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    tables = physical_names(service.template, service.refs, "AWS::DynamoDB::Table")
    return [
        sorted((item["PK"]["S"], item["SK"]["S"]) for item in dynamodb.scan(TableName=table)["Items"])
        for table in tables
    ]


def test_a_checkpoint_of_the_service_comes_back_whole_after_the_stack_is_emptied(service, request):
    # Given a world built through the API: a KB shared with a reader, and a file
    kb_id = create_memmy_kb(service, name="路线图")
    service.call("PUT", "/me", "bob")
    assert (
        service.call("POST", f"/knowledge-bases/{kb_id}/members", "alice", body={"identifier": "bob"}).status
        == 201
    )
    seed.add_file(service, kb_id, "alice", "路线图.md", "# 路线图\n第三季度 walrus".encode())
    items, memos = _items(service), service.memos.state()["knowledge_bases"]
    saved = checkpoint.take(service)
    # When the stack and the emulator are emptied, as the service fixture does before each test
    _reset_stack(request.getfixturevalue("_moto_stack"))
    service.memos.emulator.reset()
    assert _items(service) != items
    checkpoint.put_back(service, saved)
    # Then every item, the MemOS KB and its file are back, and the API answers on them as before
    assert _items(service) == items
    assert service.memos.state()["knowledge_bases"] == memos
    listed = service.call("GET", f"/knowledge-bases/{kb_id}/files", "bob")
    assert listed.status == 200, listed.body
    assert [f["name"] for f in listed.body["files"]] == ["路线图.md"]

"""MemosClient against ``httpx.MockTransport``: request shapes, reply variants, errors, retries, auth."""

from __future__ import annotations

import contextlib
import json
import logging
import random
from collections.abc import Callable
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

import httpx
import pytest

from memmy_kb.adapters.memos.client import MemosClient
from memmy_kb.adapters.memos.models import (
    FilePage,
    MemosFile,
    MemosMemory,
    normalise_file_status,
    parse_timestamp,
)
from memmy_kb.domain.engine import (
    EngineFile,
    FileInput,
    FileStatus,
    MemosAuthError,
    MemosError,
    MemosFileTooLarge,
    MemosNotFound,
    MemosQuotaExceeded,
    MemosRateLimited,
    MemosRejectedInput,
    MemosUnavailable,
    MemosUnsupportedFile,
    SearchHit,
)

BASE_URL = "https://memos.example.test/api/openmem/v1"
API_KEY = "mpg-secret-key-0123456789"
NEW_API_KEY = "mpg-rotated-key-9876543210"
KB_ID = "kb0123456789abcdef0123456789abcd"
FILE_ID = "f0123456789abcdef0123456789abcde"

Reply = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


def envelope(
    data: Any = None, *, code: int = 0, message: str = "ok", status: int = HTTPStatus.OK
) -> httpx.Response:
    return httpx.Response(status, json={"code": code, "data": data, "message": message})


def memos_error(code: int, *, status: int = HTTPStatus.OK, message: str = "failed") -> httpx.Response:
    return httpx.Response(status, json={"code": code, "data": None, "message": message})


class FakeMemos:
    """A MockTransport handler that records requests and plays replies in order (the last one repeats)."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            return reply(request)
        return reply

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]


class KeyProvider:
    """Hands out API_KEY, then NEW_API_KEY once asked to refresh; records every call."""

    def __init__(self) -> None:
        self.calls: list[bool] = []

    def __call__(self, force_refresh: bool) -> str:
        self.calls.append(force_refresh)
        return NEW_API_KEY if any(self.calls) else API_KEY


class FixedRandom(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


class Harness:
    def __init__(self, *replies: Reply, **client_kwargs: Any) -> None:
        self.memos = FakeMemos(*replies)
        self.keys = KeyProvider()
        self.sleeps: list[float] = []
        client_kwargs.setdefault("rng", random.Random(7))
        self.client = MemosClient(
            BASE_URL,
            self.keys,
            http=httpx.Client(transport=httpx.MockTransport(self.memos)),
            sleep=self.sleeps.append,
            **client_kwargs,
        )


def harness(*replies: Reply, **client_kwargs: Any) -> Harness:
    return Harness(*replies, **client_kwargs)


def file_item(status: str = "running", **extra: Any) -> dict[str, Any]:
    return {"id": FILE_ID, "type": "document", "name": "notes.md", "sizeMB": 0.01, "status": status, **extra}


def memory_item(**extra: Any) -> dict[str, Any]:
    return {
        "id": "m1",
        "memory_key": "季度报告",
        "memory_value": "营收增长了百分之十。",
        "memory_type": "LongTermMemory",
        "create_time": 1_735_689_600_000,
        "update_time": "2025-01-01T00:00:00Z",
        "conversation_id": "default_session",
        "status": "activated",
        "confidence": 0.99,
        "tags": ["multimodal:file"],
        "relativity": 0.87,
        **extra,
    }


# -- requests ----------------------------------------------------------------------------------------


def test_every_call_is_a_json_post_with_the_token_header() -> None:
    # Given a client over a recording transport
    h = harness(envelope({"id": KB_ID}))
    # When creating a KB
    h.client.create_knowledgebase("Handbook", "team docs")
    # Then the request is a JSON POST to the prefixed path with the Token header
    request = h.memos.requests[0]
    assert request.method == "POST"
    assert str(request.url) == f"{BASE_URL}/create/knowledgebase"
    assert request.headers["Authorization"] == f"Token {API_KEY}"
    assert request.headers["Content-Type"] == "application/json"
    assert h.memos.bodies[0] == {"knowledgebase_name": "Handbook", "knowledgebase_description": "team docs"}


def test_base_url_with_trailing_slash_and_other_prefix() -> None:
    memos = FakeMemos(envelope({"id": KB_ID}))
    client = MemosClient(
        "http://127.0.0.1:9/custom/prefix/",
        lambda _force: API_KEY,
        http=httpx.Client(transport=httpx.MockTransport(memos)),
    )
    client.create_knowledgebase("x")
    assert str(memos.requests[0].url) == "http://127.0.0.1:9/custom/prefix/create/knowledgebase"


def test_create_without_description_omits_it() -> None:
    h = harness(envelope({"id": KB_ID}))
    h.client.create_knowledgebase("Handbook")
    assert h.memos.bodies[0] == {"knowledgebase_name": "Handbook"}


def test_add_files_body() -> None:
    h = harness(envelope([file_item()]))
    files = [
        FileInput(content="data:text/markdown;base64,IyBoaQ==", name="hi.md"),
        FileInput(content="https://example.test/a.pdf"),
        FileInput.from_bytes("# 你好".encode(), name="zh.md", mime_type="text/markdown"),
    ]
    h.client.add_knowledgebase_files(KB_ID, files)
    assert str(h.memos.requests[0].url) == f"{BASE_URL}/add/knowledgebase-file"
    assert h.memos.bodies[0] == {
        "knowledgebase_id": KB_ID,
        "file": [
            {"content": "data:text/markdown;base64,IyBoaQ==", "name": "hi.md", "type": "document"},
            {"content": "https://example.test/a.pdf", "type": "document"},
            {"content": "data:text/markdown;base64,IyDkvaDlpb0=", "name": "zh.md", "type": "document"},
        ],
    }


def test_add_files_refuses_an_empty_list() -> None:
    h = harness(envelope([file_item()]))
    with pytest.raises(ValueError, match="at least one"):
        h.client.add_knowledgebase_files(KB_ID, [])
    assert h.memos.requests == []


def test_get_files_sends_only_file_ids() -> None:
    h = harness(envelope({"file_detail_list": [file_item("completed")]}))
    h.client.get_knowledgebase_files([FILE_ID, "other"])
    assert str(h.memos.requests[0].url) == f"{BASE_URL}/get/knowledgebase-file"
    assert h.memos.bodies[0] == {"file_ids": [FILE_ID, "other"]}


def test_get_files_with_no_ids_makes_no_call() -> None:
    h = harness(envelope({"file_detail_list": []}))
    assert h.client.get_knowledgebase_files([]) == []
    assert h.memos.requests == []


def test_list_files_body() -> None:
    h = harness(envelope({"total": 0, "page": 2, "page_size": 5, "file_detail_list": []}))
    h.client.list_knowledgebase_files(KB_ID, page=2, page_size=5)
    assert h.memos.bodies[0] == {"knowledgebase_id": KB_ID, "page": 2, "page_size": 5}


@pytest.mark.parametrize(("page", "page_size"), [(0, 20), (1, 0)])
def test_list_files_refuses_bad_paging(page: int, page_size: int) -> None:
    h = harness(envelope({}))
    with pytest.raises(ValueError, match="at least 1"):
        h.client.list_knowledgebase_files(KB_ID, page=page, page_size=page_size)


def test_delete_files_body() -> None:
    h = harness(envelope({"success": True}))
    h.client.delete_knowledgebase_files([FILE_ID])
    assert str(h.memos.requests[0].url) == f"{BASE_URL}/delete/knowledgebase-file"
    assert h.memos.bodies[0] == {"file_ids": [FILE_ID]}


def test_delete_files_with_no_ids_makes_no_call() -> None:
    h = harness(envelope({"success": True}))
    h.client.delete_knowledgebase_files([])
    assert h.memos.requests == []


@pytest.mark.parametrize("delete_all", [True, False])
def test_delete_knowledge_base_body(delete_all: bool) -> None:
    h = harness(envelope({"success": True}))
    h.client.delete_knowledgebase(KB_ID, delete_all=delete_all)
    assert str(h.memos.requests[0].url) == f"{BASE_URL}/delete/knowledgebase"
    assert h.memos.bodies[0] == {"knowledgebase_id": KB_ID, "delete_all": delete_all}


def test_search_body_names_exactly_the_scope_and_no_other_memories() -> None:
    h = harness(envelope({"memory_detail_list": []}))
    h.client.search_memory("kb-reader-u1", "季度营收", [KB_ID, "kb2"], limit=5, relativity=0.3)
    assert str(h.memos.requests[0].url) == f"{BASE_URL}/search/memory"
    assert h.memos.bodies[0] == {
        "user_id": "kb-reader-u1",
        "query": "季度营收",
        "knowledgebase_ids": [KB_ID, "kb2"],
        "memory_limit_number": 5,
        "relativity": 0.3,
        "include_preference": False,
        "include_tool_memory": False,
        "include_skill": False,
    }


def test_search_defaults_leave_relativity_to_memos() -> None:
    h = harness(envelope({"memory_detail_list": []}))
    h.client.search_memory("kb-reader-u1", "q", [KB_ID])
    body = h.memos.bodies[0]
    assert body["memory_limit_number"] == 9
    assert "relativity" not in body


@pytest.mark.parametrize("kb_ids", [[], ["all"], [KB_ID, "ALL"], [" all "], [""], [KB_ID, "  "]])
def test_search_refuses_an_empty_or_all_scope(kb_ids: list[str]) -> None:
    h = harness(envelope({"memory_detail_list": []}))
    with pytest.raises(ValueError, match="knowledge base id"):
        h.client.search_memory("kb-reader-u1", "q", kb_ids)
    assert h.memos.requests == []


@pytest.mark.parametrize(("limit", "relativity"), [(0, None), (26, None), (9, -0.1), (9, 1.5)])
def test_search_refuses_out_of_range_limits(limit: int, relativity: float | None) -> None:
    h = harness(envelope({"memory_detail_list": []}))
    with pytest.raises(ValueError, match="between"):
        h.client.search_memory("kb-reader-u1", "q", [KB_ID], limit=limit, relativity=relativity)
    assert h.memos.requests == []


# -- reply variants ----------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [0, 200, "0"])
@pytest.mark.parametrize(
    "data", [{"id": KB_ID}, {"knowledgebase_id": KB_ID}, {"id": None, "knowledgebase_id": KB_ID}, KB_ID]
)
def test_create_reads_id_or_knowledgebase_id_under_either_success_code(code: Any, data: Any) -> None:
    h = harness(httpx.Response(HTTPStatus.OK, json={"code": code, "data": data, "message": "ok"}))
    assert h.client.create_knowledgebase("Handbook") == KB_ID


def test_create_accepts_a_numeric_id() -> None:
    h = harness(envelope({"id": 42}))
    assert h.client.create_knowledgebase("Handbook") == "42"


@pytest.mark.parametrize("data", [None, {}, {"id": ""}, []])
def test_create_without_an_id_is_unavailable_and_not_retried(data: Any) -> None:
    h = harness(envelope(data))
    with pytest.raises(MemosUnavailable):
        h.client.create_knowledgebase("Handbook")
    assert len(h.memos.requests) == 1


@pytest.mark.parametrize("code", [0, 200])
def test_add_files_accepts_a_list(code: int) -> None:
    second = file_item("running", id="f2", name="b.md")
    h = harness(envelope([file_item(), second], code=code))
    added = h.client.add_knowledgebase_files(KB_ID, [FileInput(content="aGk=", name="a.md")] * 2)
    assert [f.id for f in added] == [FILE_ID, "f2"]
    assert all(f.status is FileStatus.PROCESSING for f in added)
    assert all(isinstance(f, EngineFile) for f in added)


def test_add_files_accepts_a_single_object() -> None:
    h = harness(envelope(file_item("running")))
    added = h.client.add_knowledgebase_files(KB_ID, [FileInput(content="aGk=", name="a.md")])
    assert added == [EngineFile(id=FILE_ID, name="notes.md", status=FileStatus.PROCESSING)]


def test_update_file_body_is_the_file_id_and_one_file_of_name_and_content() -> None:
    h = harness(envelope(file_item("running")))
    updated = h.client.update_knowledgebase_file(FILE_ID, FileInput(content="data:text/markdown;base64,aGk=", name="a.md"))
    assert str(h.memos.requests[0].url) == f"{BASE_URL}/update/knowledgebase-file"
    assert h.memos.bodies[0] == {"file_id": FILE_ID, "file": {"name": "a.md", "content": "data:text/markdown;base64,aGk="}}
    assert updated == EngineFile(id=FILE_ID, name="notes.md", status=FileStatus.PROCESSING)


@pytest.mark.parametrize("data", [None, [file_item("running")], {"success": True}])
def test_update_file_accepts_a_list_an_object_or_no_file_in_the_reply(data: Any) -> None:
    h = harness(envelope(data))
    updated = h.client.update_knowledgebase_file(FILE_ID, FileInput(content="aGk=", name="a.md"))
    assert updated.id == FILE_ID
    assert updated.status is FileStatus.PROCESSING


def test_update_file_of_a_file_memos_lacks_is_not_found() -> None:
    h = harness(memos_error(40001))
    with pytest.raises(MemosNotFound):
        h.client.update_knowledgebase_file(FILE_ID, FileInput(content="aGk=", name="a.md"))


@pytest.mark.parametrize("data", [None, [], {"success": True}])
def test_add_files_reply_without_files_is_unavailable_not_silent(data: Any) -> None:
    h = harness(envelope(data))
    with pytest.raises(MemosUnavailable):
        h.client.add_knowledgebase_files(KB_ID, [FileInput(content="aGk=", name="a.md")])
    assert len(h.memos.requests) == 1


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("running", FileStatus.PROCESSING),
        ("processing", FileStatus.PROCESSING),
        ("PROCESSING", FileStatus.PROCESSING),
        ("pending", FileStatus.PROCESSING),
        ("queued", FileStatus.PROCESSING),
        ("Running", FileStatus.PROCESSING),
        ("completed", FileStatus.AVAILABLE),
        ("COMPLETED", FileStatus.AVAILABLE),
        ("success", FileStatus.AVAILABLE),
        ("done", FileStatus.AVAILABLE),
        (" Completed ", FileStatus.AVAILABLE),
        ("failed", FileStatus.FAILED),
        ("FAILED", FileStatus.FAILED),
        ("PROCESSING_FAILED", FileStatus.FAILED),
        ("processing-failed", FileStatus.FAILED),
        ("error", FileStatus.FAILED),
        ("ERROR", FileStatus.FAILED),
    ],
)
def test_every_status_spelling_is_normalised(raw: str, expected: FileStatus) -> None:
    h = harness(envelope({"file_detail_list": [file_item(raw)]}))
    [file] = h.client.get_knowledgebase_files([FILE_ID])
    assert file.status is expected
    assert MemosFile.model_validate(file_item(raw)).raw_status == raw


@pytest.mark.parametrize("raw", ["exploded", "", None, 3])
def test_unknown_status_counts_as_processing_and_is_logged(
    raw: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    assert normalise_file_status(raw) is FileStatus.PROCESSING
    assert "Unknown MemOS file status" in caplog.text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1_735_689_600_000, datetime(2025, 1, 1, tzinfo=UTC)),
        ("1735689600000", datetime(2025, 1, 1, tzinfo=UTC)),
        (1_735_689_600, datetime(2025, 1, 1, tzinfo=UTC)),
        (1_735_689_600_000.0, datetime(2025, 1, 1, tzinfo=UTC)),
        ("2025-01-01T00:00:00Z", datetime(2025, 1, 1, tzinfo=UTC)),
        ("2025-01-01T08:00:00+08:00", datetime(2025, 1, 1, tzinfo=UTC)),
        ("2025-01-01T00:00:00.000000", datetime(2025, 1, 1, tzinfo=UTC)),
        ("2025-01-01 00:00:00", datetime(2025, 1, 1, tzinfo=UTC)),
        ("not a time", None),
        ("", None),
        (None, None),
        (True, None),
        ([1], None),
        (10**30, None),
    ],
)
def test_timestamps_accept_epoch_ms_and_iso(value: Any, expected: datetime | None) -> None:
    assert parse_timestamp(value) == expected


@pytest.mark.parametrize("stamp", [1_735_689_600_000, "2025-01-01T00:00:00Z", "2025-01-01T00:00:00"])
def test_file_and_memory_timestamps_in_either_form(stamp: Any) -> None:
    expected = datetime(2025, 1, 1, tzinfo=UTC)
    h = harness(envelope({"file_detail_list": [file_item("completed", create_time=stamp, update_time=stamp)]}))
    [file] = h.client.list_knowledgebase_files(KB_ID).files
    memory = MemosMemory.model_validate(memory_item(create_time=stamp, update_time=stamp))
    assert file.created_at == file.updated_at == expected
    assert memory.created_at == memory.updated_at == expected


@pytest.mark.parametrize(("size", "expected"), [("1024", "1024"), (1024, 1024), (1.5, 1.5), (None, None)])
def test_file_size_is_kept_as_given(size: Any, expected: Any) -> None:
    h = harness(envelope({"file_detail_list": [file_item("completed", size=size)]}))
    [file] = h.client.list_knowledgebase_files(KB_ID).files
    assert file.size == expected
    assert type(file.size) is type(expected)


def test_files_tolerate_extra_null_and_missing_fields() -> None:
    items = [
        {
            "id": FILE_ID,
            "status": "completed",
            "name": None,
            "sizeMB": None,
            "size": None,
            "surprise": {"a": 1},
        },
        {"id": "f2", "sizeMB": "not a number"},
        {"id": 7, "status": "failed", "sizeMB": "2.5", "type": None},
    ]
    h = harness(envelope({"file_detail_list": items, "page": None}))
    files = h.client.list_knowledgebase_files(KB_ID).files
    assert [(f.id, f.status, f.size_mb) for f in files] == [
        (FILE_ID, FileStatus.AVAILABLE, None),
        ("f2", FileStatus.PROCESSING, None),
        ("7", FileStatus.FAILED, 2.5),
    ]


@pytest.mark.parametrize("data", [{"file_detail_list": "oops"}, {"file_detail_list": [{"name": "no id"}]}, 5])
def test_unreadable_file_lists_are_unavailable(data: Any) -> None:
    h = harness(envelope(data), max_attempts=1)
    with pytest.raises(MemosUnavailable):
        h.client.get_knowledgebase_files([FILE_ID])


def test_get_files_accepts_a_bare_list_and_null_data() -> None:
    h = harness(envelope([file_item("completed")]), envelope(None))
    assert [f.id for f in h.client.get_knowledgebase_files([FILE_ID])] == [FILE_ID]
    assert h.client.get_knowledgebase_files([FILE_ID]) == []


def test_list_files_reads_page_fields() -> None:
    h = harness(envelope({"total": "45", "page": 2, "page_size": 20, "file_detail_list": [file_item()]}))
    page = h.client.list_knowledgebase_files(KB_ID, page=2)
    assert page == FilePage(total=45, page=2, page_size=20, files=[MemosFile.model_validate(file_item())])
    assert page.has_more


def test_list_files_fills_missing_page_fields_from_the_request() -> None:
    h = harness(envelope({"file_detail_list": [file_item()]}))
    page = h.client.list_knowledgebase_files(KB_ID, page=3, page_size=10)
    assert (page.total, page.page, page.page_size) == (None, 3, 10)
    assert not page.has_more


def test_iter_files_pages_through_all_using_total() -> None:
    def files(n: int, start: int) -> list[dict[str, Any]]:
        return [file_item("completed", id=f"f{i}") for i in range(start, start + n)]

    h = harness(
        envelope({"total": 5, "page": 1, "page_size": 2, "file_detail_list": files(2, 0)}),
        envelope({"total": 5, "page": 2, "page_size": 2, "file_detail_list": files(2, 2)}),
        envelope({"total": 5, "page": 3, "page_size": 2, "file_detail_list": files(1, 4)}),
    )
    assert [f.id for f in h.client.iter_knowledgebase_files(KB_ID, page_size=2)] == ["f0", "f1", "f2", "f3", "f4"]
    assert [b["page"] for b in h.memos.bodies] == [1, 2, 3]


def test_iter_files_without_total_stops_at_a_short_page() -> None:
    h = harness(
        envelope({"file_detail_list": [file_item(id="a"), file_item(id="b")]}),
        envelope({"file_detail_list": [file_item(id="c")]}),
    )
    assert [f.id for f in h.client.iter_knowledgebase_files(KB_ID, page_size=2)] == ["a", "b", "c"]
    assert len(h.memos.requests) == 2


def test_iter_files_stops_when_the_server_ignores_the_page() -> None:
    same = envelope({"total": 100, "file_detail_list": [file_item(id="a"), file_item(id="b")]})
    h = harness(same)
    assert [f.id for f in h.client.iter_knowledgebase_files(KB_ID, page_size=2)] == ["a", "b"]
    assert len(h.memos.requests) == 2


def test_iter_files_of_an_empty_kb() -> None:
    h = harness(envelope({"total": 0, "file_detail_list": []}))
    assert list(h.client.iter_knowledgebase_files(KB_ID)) == []


@pytest.mark.parametrize("code", [0, 200])
def test_search_maps_memory_items(code: int) -> None:
    h = harness(envelope({"memory_detail_list": [memory_item()], "preference_detail_list": []}, code=code))
    [hit] = h.client.search_memory("kb-reader-u1", "营收", [KB_ID])
    assert hit == SearchHit(title="季度报告", content="营收增长了百分之十。", score=pytest.approx(0.87))
    # The rest of the item is parsed too, though the domain reads none of it.
    memory = MemosMemory.model_validate(memory_item())
    assert memory.id == "m1"
    assert memory.tags == ["multimodal:file"]
    assert memory.memory_type == "LongTermMemory"
    assert memory.conversation_id == "default_session"
    assert memory.confidence == pytest.approx(0.99)
    assert memory.created_at == datetime(2025, 1, 1, tzinfo=UTC)


def test_search_tolerates_missing_null_and_extra_fields() -> None:
    items = [
        {"memory_value": "only text"},
        {"memory_key": None, "memory_value": None, "relativity": None, "tags": None, "new_field": [1]},
        {
            "id": 5,
            "memory_key": "t",
            "memory_value": "v",
            "relativity": "0.5",
            "tags": "single",
            "confidence": "x",
        },
        "not an object",
    ]
    h = harness(envelope({"memory_detail_list": items}))
    memories = h.client.search_memory("r", "q", [KB_ID])
    assert [(m.title, m.content, m.score) for m in memories] == [("", "only text", None), ("", "", None), ("t", "v", 0.5)]
    parsed = [MemosMemory.model_validate(item) for item in items[:3]]
    assert [(m.id, m.tags) for m in parsed] == [(None, []), (None, []), ("5", ["single"])]


@pytest.mark.parametrize("data", [None, {}, {"memory_detail_list": None}])
def test_search_with_no_hits(data: Any) -> None:
    h = harness(envelope(data))
    assert h.client.search_memory("r", "q", [KB_ID]) == []


@pytest.mark.parametrize("data", [[], "x", {"memory_detail_list": "x"}])
def test_search_with_an_unreadable_reply_is_unavailable(data: Any) -> None:
    h = harness(envelope(data), max_attempts=1)
    with pytest.raises(MemosUnavailable):
        h.client.search_memory("r", "q", [KB_ID])


def test_memory_repr_hides_the_content() -> None:
    memory = MemosMemory.model_validate(memory_item())
    assert "营收增长" not in repr(memory)
    assert "营收增长" not in str(memory)


# -- errors ------------------------------------------------------------------------------------------

CODE_FAMILIES = [
    (40001, MemosNotFound),
    (50120, MemosNotFound),
    (50123, MemosNotFound),
    (40300, MemosQuotaExceeded),
    (40304, MemosQuotaExceeded),
    (40309, MemosRateLimited),
    (50000, MemosUnavailable),
    (50002, MemosUnavailable),
    (50004, MemosUnavailable),
    (50005, MemosUnavailable),
    (40000, MemosRejectedInput),
    (40002, MemosRejectedInput),
    (40003, MemosRejectedInput),
    (40007, MemosUnsupportedFile),
    (40008, MemosRejectedInput),
    (40009, MemosRejectedInput),
    (40012, MemosRejectedInput),
    (50103, MemosRejectedInput),
    (50104, MemosFileTooLarge),
    (50105, MemosFileTooLarge),
    (50107, MemosUnsupportedFile),
    (40100, MemosAuthError),
    (40130, MemosAuthError),
    (40103, MemosAuthError),
    (40132, MemosAuthError),
    (40999, MemosRejectedInput),
    (45678, MemosRejectedInput),
    (50999, MemosUnavailable),
    (59999, MemosUnavailable),
    (500, MemosUnavailable),
    (429, MemosRateLimited),
    (-1, MemosError),
]


@pytest.mark.parametrize(("code", "family"), CODE_FAMILIES)
def test_error_codes_in_an_http_200_reply_map_to_their_family(code: int, family: type[MemosError]) -> None:
    h = harness(memos_error(code, message="something"), max_attempts=1)
    with pytest.raises(MemosError) as caught:
        h.client.get_knowledgebase_files([FILE_ID])
    assert type(caught.value) is family
    assert caught.value.code == code
    assert caught.value.http_status == HTTPStatus.OK
    assert caught.value.message == "something"
    assert caught.value.endpoint == "/get/knowledgebase-file"


@pytest.mark.parametrize(("code", "family"), [(40007, MemosRejectedInput), (40132, MemosAuthError)])
def test_error_codes_with_an_http_error_status_map_by_code(code: int, family: type[MemosError]) -> None:
    h = harness(memos_error(code, status=HTTPStatus.BAD_REQUEST), max_attempts=1)
    with pytest.raises(family) as caught:
        h.client.list_knowledgebase_files(KB_ID)
    assert caught.value.http_status == HTTPStatus.BAD_REQUEST


def test_the_code_wins_over_the_message_text() -> None:
    h = harness(memos_error(40007, message="knowledge base does not exist; rate limited; unauthorized"))
    with pytest.raises(MemosRejectedInput):
        h.client.get_knowledgebase_files([FILE_ID])


@pytest.mark.parametrize(
    ("status", "family"),
    [
        (HTTPStatus.BAD_REQUEST, MemosRejectedInput),
        (HTTPStatus.UNAUTHORIZED, MemosAuthError),
        (HTTPStatus.FORBIDDEN, MemosAuthError),
        (HTTPStatus.TOO_MANY_REQUESTS, MemosRateLimited),
        (HTTPStatus.INTERNAL_SERVER_ERROR, MemosUnavailable),
        (HTTPStatus.BAD_GATEWAY, MemosUnavailable),
        (HTTPStatus.SERVICE_UNAVAILABLE, MemosUnavailable),
        (HTTPStatus.GATEWAY_TIMEOUT, MemosUnavailable),
        (HTTPStatus.NOT_FOUND, MemosError),
    ],
)
@pytest.mark.parametrize(
    "body",
    [b"<html>Bad Gateway</html>", b"", b'{"message": "Forbidden"}', b'{"code": 0, "data": null}'],
)
def test_http_error_statuses_without_a_code_map_to_their_family(
    status: int, family: type[MemosError], body: bytes
) -> None:
    h = harness(httpx.Response(status, content=body), max_attempts=1)
    with pytest.raises(MemosError) as caught:
        h.client.delete_knowledgebase_files([FILE_ID])
    assert type(caught.value) is family
    assert caught.value.http_status == status
    assert caught.value.code is None


def test_an_http_404_without_a_code_is_not_treated_as_already_deleted() -> None:
    # A wrong base URL must not make cleanup believe the KB is gone.
    h = harness(httpx.Response(HTTPStatus.NOT_FOUND, text="no route"))
    with pytest.raises(MemosError) as caught:
        h.client.delete_knowledgebase(KB_ID, delete_all=True)
    assert not isinstance(caught.value, MemosNotFound)


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(HTTPStatus.OK, text="<html>maintenance</html>"),
        httpx.Response(HTTPStatus.OK, content=b"\xff\xfe\x00garbled"),
        httpx.Response(HTTPStatus.OK, json=[1, 2]),
        httpx.Response(HTTPStatus.OK, json={"data": {"id": KB_ID}}),
        httpx.Response(HTTPStatus.OK, json={"code": True, "data": {}}),
        httpx.Response(HTTPStatus.OK, json={"code": None, "data": {}}),
    ],
)
def test_non_json_or_garbled_replies_are_unavailable(response: httpx.Response) -> None:
    h = harness(response, max_attempts=1)
    with pytest.raises(MemosUnavailable):
        h.client.search_memory("r", "q", [KB_ID])


@pytest.mark.parametrize(
    "exc",
    [
        httpx.ReadTimeout("slow"),
        httpx.WriteTimeout("slow"),
        httpx.ConnectTimeout("slow"),
        httpx.PoolTimeout("busy"),
        httpx.ConnectError("refused"),
        httpx.ReadError("reset"),
        httpx.RemoteProtocolError("garbled"),
    ],
)
def test_transport_failures_are_unavailable(exc: Exception) -> None:
    h = harness(exc, max_attempts=1)
    with pytest.raises(MemosUnavailable) as caught:
        h.client.search_memory("r", "q", [KB_ID])
    assert caught.value.__cause__ is exc


def test_request_sent_tells_whether_memos_may_have_acted() -> None:
    h = harness(httpx.ConnectError("refused"), httpx.ReadTimeout("slow"), max_attempts=1)
    with pytest.raises(MemosUnavailable) as refused:
        h.client.create_knowledgebase("x")
    with pytest.raises(MemosUnavailable) as timed_out:
        h.client.create_knowledgebase("x")
    assert refused.value.request_sent is False
    assert timed_out.value.request_sent is True


def test_the_configured_timeout_applies_to_an_injected_client() -> None:
    seen: list[dict[str, float | None]] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions["timeout"])
        return envelope({"id": KB_ID})

    timeout = httpx.Timeout(connect=1.0, read=3.0, write=4.0, pool=5.0)
    client = MemosClient(
        BASE_URL,
        lambda _f: API_KEY,
        http=httpx.Client(transport=httpx.MockTransport(record)),
        timeout=timeout,
    )
    client.create_knowledgebase("x")
    assert seen == [{"connect": 1.0, "read": 3.0, "write": 4.0, "pool": 5.0}]


def test_the_default_timeout_is_explicit_and_short() -> None:
    seen: list[dict[str, float | None]] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions["timeout"])
        return envelope({"id": KB_ID})

    client = MemosClient(
        BASE_URL, lambda _f: API_KEY, http=httpx.Client(transport=httpx.MockTransport(record))
    )
    client.create_knowledgebase("x")
    assert all(value is not None and value <= 10 for value in seen[0].values())


@pytest.mark.parametrize("code", [40001, 50120, 50123])
def test_delete_knowledge_base_not_found_counts_as_done(code: int) -> None:
    h = harness(memos_error(code))
    h.client.delete_knowledgebase(KB_ID, delete_all=True)
    assert len(h.memos.requests) == 1


@pytest.mark.parametrize("code", [40001, 50120, 50123])
def test_delete_files_not_found_counts_as_done(code: int) -> None:
    h = harness(memos_error(code))
    h.client.delete_knowledgebase_files([FILE_ID])
    assert len(h.memos.requests) == 1


def test_a_delete_that_timed_out_then_reports_not_found_is_done() -> None:
    h = harness(httpx.ReadTimeout("slow"), memos_error(50120))
    h.client.delete_knowledgebase(KB_ID, delete_all=True)
    assert len(h.memos.requests) == 2


# -- retries -----------------------------------------------------------------------------------------

SAFE_CALLS: dict[str, Callable[[MemosClient], object]] = {
    "get_files": lambda c: c.get_knowledgebase_files([FILE_ID]),
    "list_files": lambda c: c.list_knowledgebase_files(KB_ID),
    "iter_files": lambda c: list(c.iter_knowledgebase_files(KB_ID)),
    "search": lambda c: c.search_memory("r", "q", [KB_ID]),
    "delete_files": lambda c: c.delete_knowledgebase_files([FILE_ID]),
    "delete_knowledge_base": lambda c: c.delete_knowledgebase(KB_ID, delete_all=True),
    "update_file": lambda c: c.update_knowledgebase_file(FILE_ID, FileInput(content="aGk=", name="a.md")),
}
UNSAFE_CALLS: dict[str, Callable[[MemosClient], object]] = {
    "create_knowledge_base": lambda c: c.create_knowledgebase("x"),
    "add_knowledgebase_files": lambda c: c.add_knowledgebase_files(KB_ID, [FileInput(content="aGk=", name="a.md")]),
}
TRANSIENT_FAILURES: dict[str, Reply] = {
    "code 50004": memos_error(50004),
    "code 40309": memos_error(40309),
    "HTTP 429": httpx.Response(HTTPStatus.TOO_MANY_REQUESTS),
    "HTTP 503": httpx.Response(HTTPStatus.SERVICE_UNAVAILABLE, text="busy"),
    "read timeout": httpx.ReadTimeout("slow"),
    "garbled": httpx.Response(HTTPStatus.OK, text="<html>"),
}
SUCCESS_FOR: dict[str, httpx.Response] = {
    "get_files": envelope({"file_detail_list": [file_item()]}),
    "list_files": envelope({"total": 1, "file_detail_list": [file_item()]}),
    "iter_files": envelope({"total": 1, "file_detail_list": [file_item()]}),
    "search": envelope({"memory_detail_list": [memory_item()]}),
    "delete_files": envelope({"success": True}),
    "delete_knowledge_base": envelope({"success": True}),
    "update_file": envelope(file_item()),
    "create_knowledge_base": envelope({"id": KB_ID}),
    "add_knowledgebase_files": envelope([file_item()]),
}


@pytest.mark.parametrize("failure", TRANSIENT_FAILURES.values(), ids=TRANSIENT_FAILURES.keys())
@pytest.mark.parametrize("call", SAFE_CALLS.values(), ids=SAFE_CALLS.keys())
def test_safe_calls_retry_transient_failures_up_to_max_attempts(
    call: Callable[[MemosClient], object], failure: Reply
) -> None:
    h = harness(failure, max_attempts=4)
    with pytest.raises((MemosUnavailable, MemosRateLimited)):
        call(h.client)
    assert len(h.memos.requests) == 4
    assert len(h.sleeps) == 3


@pytest.mark.parametrize("name", SAFE_CALLS.keys())
def test_safe_calls_succeed_after_transient_failures(name: str) -> None:
    h = harness(memos_error(50004), httpx.ReadTimeout("slow"), SUCCESS_FOR[name], max_attempts=3)
    SAFE_CALLS[name](h.client)
    assert len(h.memos.requests) == 3
    assert len(h.sleeps) == 2


@pytest.mark.parametrize("failure", TRANSIENT_FAILURES.values(), ids=TRANSIENT_FAILURES.keys())
@pytest.mark.parametrize("call", UNSAFE_CALLS.values(), ids=UNSAFE_CALLS.keys())
def test_create_and_add_are_not_retried_once_the_request_may_have_arrived(
    call: Callable[[MemosClient], object], failure: Reply
) -> None:
    h = harness(failure, max_attempts=4)
    with pytest.raises((MemosUnavailable, MemosRateLimited)):
        call(h.client)
    assert len(h.memos.requests) == 1
    assert h.sleeps == []


@pytest.mark.parametrize(
    "exc", [httpx.ConnectError("refused"), httpx.ConnectTimeout("slow"), httpx.PoolTimeout("busy")]
)
@pytest.mark.parametrize("name", UNSAFE_CALLS.keys())
def test_create_and_add_are_retried_when_nothing_was_sent(name: str, exc: Exception) -> None:
    h = harness(exc, exc, SUCCESS_FOR[name], max_attempts=3)
    UNSAFE_CALLS[name](h.client)
    assert len(h.memos.requests) == 3


@pytest.mark.parametrize("name", UNSAFE_CALLS.keys())
def test_create_and_add_give_up_after_max_attempts_of_connect_errors(name: str) -> None:
    h = harness(httpx.ConnectError("refused"), max_attempts=3)
    with pytest.raises(MemosUnavailable):
        UNSAFE_CALLS[name](h.client)
    assert len(h.memos.requests) == 3


@pytest.mark.parametrize("code", [40300, 40007, 40001, 50103, -1])
@pytest.mark.parametrize(
    "call", {**SAFE_CALLS, **UNSAFE_CALLS}.values(), ids={**SAFE_CALLS, **UNSAFE_CALLS}.keys()
)
def test_permanent_errors_are_never_retried(call: Callable[[MemosClient], object], code: int) -> None:
    h = harness(memos_error(code), max_attempts=4)
    with contextlib.suppress(MemosError):  # delete calls take "not found" as done
        call(h.client)
    assert len(h.memos.requests) == 1
    assert h.sleeps == []


@pytest.mark.parametrize(
    "then",
    [httpx.ConnectError("refused"), memos_error(50004), httpx.Response(HTTPStatus.TOO_MANY_REQUESTS)],
    ids=["connection-refused", "code-50004", "http-429"],
)
def test_an_update_whose_first_attempt_timed_out_is_of_unknown_outcome_whatever_the_last_attempt_says(
    then: Reply,
) -> None:
    # The first update may have reached MemOS: a retry refused or failed outright does not undo it, so the
    # error must not say that MemOS did nothing (the ingest would release the replace as if nothing was sent)
    h = harness(httpx.ReadTimeout("slow"), then, max_attempts=2)

    with pytest.raises(MemosError) as raised:
        h.client.update_knowledgebase_file(FILE_ID, FileInput(content="aGk=", name="a.md"))

    assert len(h.memos.requests) == 2
    assert not raised.value.did_nothing
    only_refused = harness(httpx.ConnectError("refused"), then, max_attempts=2)
    with pytest.raises(MemosError) as refused:
        only_refused.client.update_knowledgebase_file(FILE_ID, FileInput(content="aGk=", name="a.md"))
    assert refused.value.did_nothing


def test_max_attempts_of_one_means_no_retry() -> None:
    h = harness(memos_error(50004), max_attempts=1)
    with pytest.raises(MemosUnavailable):
        h.client.search_memory("r", "q", [KB_ID])
    assert len(h.memos.requests) == 1


def test_max_attempts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        MemosClient(BASE_URL, lambda _f: API_KEY, max_attempts=0)


def test_backoff_is_exponential_and_capped() -> None:
    # Given a jitter source at its maximum, the delays are the ceilings themselves
    h = harness(memos_error(50004), max_attempts=7, backoff_base=0.5, backoff_cap=3.0, rng=FixedRandom(1.0))
    with pytest.raises(MemosUnavailable):
        h.client.get_knowledgebase_files([FILE_ID])
    assert h.sleeps == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]


@pytest.mark.parametrize("seed", range(5))
def test_full_jitter_stays_within_the_exponential_ceiling(seed: int) -> None:
    h = harness(
        memos_error(50004), max_attempts=10, backoff_base=0.1, backoff_cap=1.0, rng=random.Random(seed)
    )
    with pytest.raises(MemosUnavailable):
        h.client.search_memory("r", "q", [KB_ID])
    assert len(h.sleeps) == 9
    for attempt, delay in enumerate(h.sleeps, start=1):
        assert 0 <= delay <= min(1.0, 0.1 * 2 ** (attempt - 1))
    assert len(set(h.sleeps)) > 1  # jittered, not fixed


def test_retry_after_lengthens_the_delay_within_the_cap() -> None:
    h = harness(
        httpx.Response(HTTPStatus.TOO_MANY_REQUESTS, headers={"Retry-After": "1.5"}),
        httpx.Response(HTTPStatus.TOO_MANY_REQUESTS, headers={"Retry-After": "60"}),
        SUCCESS_FOR["search"],
        backoff_base=0.1,
        backoff_cap=5.0,
        rng=FixedRandom(0.0),
    )
    h.client.search_memory("r", "q", [KB_ID])
    assert h.sleeps == [1.5, 5.0]


# -- auth --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "auth_failure",
    [memos_error(40132), memos_error(40100), httpx.Response(HTTPStatus.UNAUTHORIZED), memos_error(40103)],
)
def test_an_auth_error_refreshes_the_key_once_and_repeats_the_call(auth_failure: httpx.Response) -> None:
    h = harness(auth_failure, envelope({"memory_detail_list": [memory_item()]}))
    assert len(h.client.search_memory("r", "q", [KB_ID])) == 1
    assert h.keys.calls == [False, True]
    assert [r.headers["Authorization"] for r in h.memos.requests] == [
        f"Token {API_KEY}",
        f"Token {NEW_API_KEY}",
    ]
    assert h.sleeps == []


@pytest.mark.parametrize(
    "call", {**SAFE_CALLS, **UNSAFE_CALLS}.values(), ids={**SAFE_CALLS, **UNSAFE_CALLS}.keys()
)
def test_a_second_auth_error_is_raised(call: Callable[[MemosClient], object]) -> None:
    h = harness(httpx.Response(HTTPStatus.FORBIDDEN), memos_error(40132))
    with pytest.raises(MemosAuthError):
        call(h.client)
    assert h.keys.calls == [False, True]
    assert len(h.memos.requests) == 2


def test_create_is_repeated_after_an_auth_refresh() -> None:
    # An auth rejection means MemOS did nothing, so repeating even a create is safe.
    h = harness(memos_error(40130), envelope({"id": KB_ID}))
    assert h.client.create_knowledgebase("x") == KB_ID
    assert len(h.memos.requests) == 2


def test_auth_refresh_and_retries_combine() -> None:
    h = harness(memos_error(50004), memos_error(40132), memos_error(50004), SUCCESS_FOR["get_files"])
    assert len(h.client.get_knowledgebase_files([FILE_ID])) == 1
    assert h.keys.calls == [False, True]
    assert len(h.memos.requests) == 4


# -- secrecy -----------------------------------------------------------------------------------------


def test_key_query_and_contents_never_reach_logs_or_errors(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a session that retries, refreshes its key and meets odd statuses
    caplog.set_level(logging.DEBUG)
    query = "机密查询 quarterly secret plan"
    secret_text = "绝密内容 top secret body"
    h = harness(
        memos_error(50004, message="internal"),
        memos_error(40132),
        envelope({"memory_detail_list": [memory_item(memory_value=secret_text)]}),
        envelope([file_item("mystery-state")]),
        httpx.Response(HTTPStatus.UNAUTHORIZED),
    )
    memories = h.client.search_memory("kb-reader-u1", query, [KB_ID])
    files = h.client.add_knowledgebase_files(
        KB_ID, [FileInput(content="data:text/plain;base64,U0VDUkVUIEJPRFk=", name="a.txt")]
    )
    with pytest.raises(MemosAuthError) as caught:
        h.client.get_knowledgebase_files([FILE_ID])
    # Then none of the secrets shows up anywhere a log or an error message goes
    out = capsys.readouterr()
    visible = " ".join(
        [
            caplog.text,
            out.out,
            out.err,
            str(caught.value),
            repr(caught.value),
            repr(h.client),
            repr(memories),
            repr(files),
            repr(FileInput(content="U0VDUkVUIEJPRFk=")),
        ]
    )
    for secret in (API_KEY, NEW_API_KEY, query, secret_text, "U0VDUkVUIEJPRFk="):
        assert secret not in visible
    assert "retrying" in caplog.text  # the warnings were emitted, just without secrets

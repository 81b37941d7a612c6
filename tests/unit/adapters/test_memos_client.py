"""MemosClient against ``httpx.MockTransport``: request shapes and reply variants (errors:
``test_memos_client_errors.py``; retries, auth and secrecy: ``test_memos_client_retries.py``)."""

from __future__ import annotations

import logging
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
    MemosNotFound,
    MemosUnavailable,
    SearchHit,
)
from tests.support.memos_http import (
    API_KEY,
    BASE_URL,
    FILE_ID,
    KB_ID,
    FakeMemos,
    envelope,
    file_item,
    harness,
    memory_item,
    memos_error,
)

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

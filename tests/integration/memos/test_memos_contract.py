"""Contract: ``MemosClient`` against the MemOS emulator, over real HTTP (docs/memos.md)."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from memmy_kb.adapters.memos.client import MemosClient
from memmy_kb.domain.engine import (
    EngineFile,
    FileInput,
    FileStatus,
    MemosAuthError,
    MemosNotFound,
    MemosQuotaExceeded,
    MemosRateLimited,
    MemosRejectedInput,
    MemosUnavailable,
)
from tests.support.polling import wait_until

EXPENSES_MD = (
    "# 差旅报销流程\n\n"
    "员工出差回来后，需要在三十天内提交报销申请，并附上发票和行程单。"
    "财务部门审核通过后五个工作日内打款。\n"
).encode()
LEAVE_TXT = "年假政策：正式员工每年享有十五天带薪年假，未休完的年假可以顺延到下一年的三月底。\n".encode()
MEETING_MD = b"# Weekly meeting\n\nThe team reviews the release checklist every Monday morning.\n"


def markdown(data: bytes = MEETING_MD, name: str = "m.md") -> FileInput:
    return FileInput.from_bytes(data, name=name, mime_type="text/markdown")


class RecordingKeys:
    """An API-key provider that serves ``keys`` in turn (the last one repeats) and records each call."""

    def __init__(self, *keys: str) -> None:
        self.keys = list(keys)
        self.calls: list[bool] = []

    def __call__(self, force_refresh: bool) -> str:
        self.calls.append(force_refresh)
        return self.keys.pop(0) if len(self.keys) > 1 else self.keys[0]


def make_client(emulator: Any, keys: Any = None, **kwargs: Any) -> MemosClient:
    kwargs.setdefault("sleep", lambda _seconds: None)
    return MemosClient(emulator.base_url, keys or RecordingKeys(emulator.api_key), **kwargs)


@pytest.fixture
def client(memos_emulator: Any) -> Iterator[MemosClient]:
    with make_client(memos_emulator) as memos:
        yield memos


def data_url(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def wait_until_settled(client: MemosClient, file_ids: list[str], timeout: float = 15.0) -> list[EngineFile]:
    def settled() -> list[EngineFile] | None:
        files = client.get_knowledgebase_files(file_ids)
        done = len(files) == len(file_ids) and all(f.status is not FileStatus.PROCESSING for f in files)
        return files if done else None

    return wait_until(settled, timeout=timeout, interval=0.02, message=f"MemOS to settle {file_ids}")


def upload(client: MemosClient, kb_id: str, *files: FileInput) -> list[EngineFile]:
    added = client.add_knowledgebase_files(kb_id, list(files))
    return wait_until_settled(client, [f.id for f in added])


def calls(emulator: Any, endpoint: str) -> int:
    return emulator.state()["calls"].get(endpoint, 0)


def kb_state(emulator: Any, kb_id: str) -> dict[str, Any] | None:
    return next((kb for kb in emulator.state()["knowledge_bases"] if kb["id"] == kb_id), None)


# -- the life of a knowledge base ----------------------------------------------------------------


def test_create_add_process_list_search_delete(client: MemosClient, memos_emulator: Any) -> None:
    # Given a new KB
    kb_id = client.create_knowledgebase("员工手册", "HR documents")
    assert kb_id
    # When a Chinese .md arrives as a data URL, a Chinese .txt as bare base64 and an English .md
    added = client.add_knowledgebase_files(
        kb_id,
        [
            FileInput(content=data_url(EXPENSES_MD, "text/markdown"), name="报销.md"),
            FileInput(content=base64.b64encode(LEAVE_TXT).decode(), name="leave.txt"),
            FileInput.from_bytes(MEETING_MD, name="meeting.md", mime_type="text/markdown"),
        ],
    )
    # Then MemOS answers at once with the files, still processing
    assert [f.name for f in added] == ["报销.md", "leave.txt", "meeting.md"]
    assert all(f.status is FileStatus.PROCESSING and len(f.id) == 32 for f in added)
    # And each becomes available shortly
    files = wait_until_settled(client, [f.id for f in added])
    assert [f.status for f in files] == [FileStatus.AVAILABLE] * 3
    assert all(f.created_at is not None and f.created_at.year >= 2024 for f in files)

    # Listing pages through them
    first = client.list_knowledgebase_files(kb_id, page=1, page_size=2)
    second = client.list_knowledgebase_files(kb_id, page=2, page_size=2)
    assert (first.total, first.page, first.page_size, len(first.files)) == (3, 1, 2, 2)
    assert first.has_more
    assert (second.total, second.page, len(second.files)) == (3, 2, 1)
    assert not second.has_more
    assert sorted(f.id for f in client.iter_knowledgebase_files(kb_id, page_size=2)) == sorted(f.id for f in added)

    # A Chinese question finds the Chinese excerpt that answers it first
    hits = client.search_memory("kb-reader-u1", "出差报销要交哪些材料", [kb_id], relativity=0)
    assert hits
    assert "报销" in hits[0].content
    assert "报销" in hits[0].title or hits[0].title.startswith("报销")
    assert all(h.score is not None and 0 <= h.score <= 1 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert (
        "报销" in client.search_memory("kb-reader-u1", "出差报销需要提交什么", [kb_id])[0].content
    )  # default threshold
    leave_hits = client.search_memory("kb-reader-u1", "年假可以顺延吗", [kb_id], limit=1, relativity=0)
    assert len(leave_hits) == 1
    assert "年假" in leave_hits[0].content

    # Deleting a file removes it from lists and search; deleting it again is no error
    expenses_id = added[0].id
    client.delete_knowledgebase_files([expenses_id])
    assert client.get_knowledgebase_files([expenses_id]) == []
    assert client.list_knowledgebase_files(kb_id).total == 2
    assert all("报销" not in h.content for h in client.search_memory("r", "出差报销", [kb_id], relativity=0))
    client.delete_knowledgebase_files([expenses_id])

    # Deleting the KB with its files leaves nothing behind; deleting it again counts as done
    client.delete_knowledgebase(kb_id, delete_all=True)
    assert kb_state(memos_emulator, kb_id) is None
    with pytest.raises(MemosNotFound):
        client.list_knowledgebase_files(kb_id)
    client.delete_knowledgebase(kb_id, delete_all=True)


def test_unlinking_a_kb_makes_it_answer_not_found(client: MemosClient, memos_emulator: Any) -> None:
    # Given a KB with a processed file
    kb_id = client.create_knowledgebase("to unlink")
    [file] = upload(client, kb_id, markdown())
    # When it is only unlinked
    client.delete_knowledgebase(kb_id, delete_all=False)
    # Then every later call with its id answers not found, while MemOS keeps the KB and its files
    with pytest.raises(MemosNotFound):
        client.list_knowledgebase_files(kb_id)
    with pytest.raises(MemosNotFound):
        client.search_memory("r", "release checklist", [kb_id])
    with pytest.raises(MemosNotFound):
        client.add_knowledgebase_files(kb_id, [markdown()])
    assert client.get_knowledgebase_files([file.id]) == []
    state = kb_state(memos_emulator, kb_id)
    assert state is not None
    assert state["linked"] is False
    assert [f["id"] for f in state["files"]] == [file.id]
    # And deleting it again counts as done
    client.delete_knowledgebase(kb_id, delete_all=False)


def test_search_stays_inside_the_given_kbs(client: MemosClient) -> None:
    mine = client.create_knowledgebase("mine")
    other = client.create_knowledgebase("other")
    upload(client, mine, markdown())
    upload(client, other, FileInput.from_bytes(EXPENSES_MD, name="报销.md", mime_type="text/markdown"))
    assert client.search_memory("r", "出差报销", [mine], relativity=0) == []
    assert client.search_memory("r", "出差报销", [other], relativity=0)


def test_a_document_that_cannot_be_parsed_ends_failed(client: MemosClient) -> None:
    kb_id = client.create_knowledgebase("broken")
    [file] = upload(
        client, kb_id, FileInput.from_bytes(b"not a pdf at all", name="x.pdf", mime_type="application/pdf")
    )
    assert file.status is FileStatus.FAILED


# -- errors ---------------------------------------------------------------------------------------


def test_an_unknown_kb_id_is_not_found(client: MemosClient) -> None:
    unknown = "0" * 32
    with pytest.raises(MemosNotFound):
        client.list_knowledgebase_files(unknown)
    with pytest.raises(MemosNotFound):
        client.search_memory("r", "q", [unknown])
    with pytest.raises(MemosNotFound):
        client.add_knowledgebase_files(unknown, [markdown()])
    client.delete_knowledgebase(unknown, delete_all=True)  # not found counts as done
    client.delete_knowledgebase_files([unknown])


def test_a_wrong_api_key_is_refetched_once_then_refused(memos_emulator: Any) -> None:
    keys = RecordingKeys("wrong-key")
    with make_client(memos_emulator, keys) as client, pytest.raises(MemosAuthError):
        client.create_knowledgebase("x")
    assert keys.calls == [False, True]
    assert calls(memos_emulator, "/create/knowledgebase") == 2


def test_a_rotated_key_is_picked_up_after_an_auth_error(memos_emulator: Any) -> None:
    keys = RecordingKeys("stale-key", memos_emulator.api_key)
    with make_client(memos_emulator, keys) as client:
        assert client.create_knowledgebase("x")
    assert keys.calls == [False, True]


def test_a_key_of_another_project_cannot_see_our_kb(client: MemosClient, memos_emulator: Any) -> None:
    kb_id = client.create_knowledgebase("ours")
    with make_client(memos_emulator, RecordingKeys(memos_emulator.other_project_key)) as theirs:
        with pytest.raises(MemosNotFound):
            theirs.list_knowledgebase_files(kb_id)
        with pytest.raises(MemosNotFound):
            theirs.search_memory("r", "q", [kb_id])


@pytest.mark.parametrize(
    ("files", "error"),
    [
        (
            [markdown(name=f"m{i}.md") for i in range(21)],
            50103,
        ),
        ([FileInput.from_bytes(b"MZ\x90\x00", name="tool.exe", mime_type="application/octet-stream")], 50107),
        ([FileInput(content="data:text/markdown;base64,***not base64***", name="a.md")], 40008),
        ([FileInput(content="***not base64***", name="a.md")], 40009),
    ],
    ids=["21 files", "disallowed format", "bad data URL", "bad bare base64"],
)
def test_files_over_limits_or_malformed_are_rejected(
    client: MemosClient, memos_emulator: Any, files: list[FileInput], error: int
) -> None:
    kb_id = client.create_knowledgebase("limits")
    with pytest.raises(MemosRejectedInput) as caught:
        client.add_knowledgebase_files(kb_id, files)
    assert caught.value.code == error
    assert calls(memos_emulator, "/add/knowledgebase-file") == 1


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ({"code": 40300}, MemosQuotaExceeded),
        ({"code": 40304}, MemosQuotaExceeded),
        ({"code": 40309}, MemosRateLimited),
        ({"http_status": 429}, MemosRateLimited),
        ({"code": 50004}, MemosUnavailable),
        ({"http_status": 500}, MemosUnavailable),
        ({"code": 40007}, MemosRejectedInput),
        ({"http_status": 400}, MemosRejectedInput),
    ],
)
def test_injected_faults_reach_the_client_as_typed_errors(
    memos_emulator: Any, fault: dict[str, Any], error: type[Exception]
) -> None:
    memos_emulator.add_fault("/create/knowledgebase", **fault)
    with make_client(memos_emulator) as client, pytest.raises(error):
        client.create_knowledgebase("x")
    # Create is never repeated once MemOS has seen it
    assert calls(memos_emulator, "/create/knowledgebase") == 1


@pytest.mark.parametrize("fault", [{"http_status": 401}, {"http_status": 403}, {"code": 40132}])
def test_an_injected_auth_fault_refreshes_the_key_and_persists_as_auth_error(
    memos_emulator: Any, fault: dict[str, Any]
) -> None:
    memos_emulator.add_fault("/search/memory", **fault)
    keys = RecordingKeys(memos_emulator.api_key)
    with make_client(memos_emulator, keys) as client:
        kb_id = client.create_knowledgebase("x")
        with pytest.raises(MemosAuthError):
            client.search_memory("r", "q", [kb_id])
    assert keys.calls == [False, False, True]


def test_a_one_off_auth_fault_is_survived_by_the_refresh(memos_emulator: Any) -> None:
    memos_emulator.add_fault("/get/knowledgebase-file", http_status=401, times=1)
    keys = RecordingKeys(memos_emulator.api_key)
    with make_client(memos_emulator, keys) as client:
        kb_id = client.create_knowledgebase("x")
        assert client.list_knowledgebase_files(kb_id).files == []
    assert keys.calls == [False, False, True]


@pytest.mark.parametrize("fault", [{"code": 50004}, {"code": 40309}, {"http_status": 503}])
def test_safe_calls_retry_transient_faults_and_recover(memos_emulator: Any, fault: dict[str, Any]) -> None:
    with make_client(memos_emulator, max_attempts=3) as client:
        kb_id = client.create_knowledgebase("x")
        memos_emulator.add_fault("/search/memory", times=2, **fault)
        assert client.search_memory("r", "q", [kb_id]) == []
    assert calls(memos_emulator, "/search/memory") == 3


def test_safe_calls_give_up_after_max_attempts(memos_emulator: Any) -> None:
    with make_client(memos_emulator, max_attempts=3) as client:
        kb_id = client.create_knowledgebase("x")
        memos_emulator.add_fault("/get/knowledgebase-file", code=50005)
        with pytest.raises(MemosUnavailable):
            client.list_knowledgebase_files(kb_id)
    assert calls(memos_emulator, "/get/knowledgebase-file") == 3


def test_add_files_is_not_repeated_after_a_server_fault(memos_emulator: Any) -> None:
    with make_client(memos_emulator, max_attempts=3) as client:
        kb_id = client.create_knowledgebase("x")
        memos_emulator.add_fault("/add/knowledgebase-file", code=50002, times=1)
        with pytest.raises(MemosUnavailable):
            client.add_knowledgebase_files(kb_id, [markdown()])
    assert calls(memos_emulator, "/add/knowledgebase-file") == 1


def test_latency_beyond_the_read_timeout_is_unavailable(memos_emulator: Any) -> None:
    timeout = httpx.Timeout(connect=1.0, read=0.2, write=1.0, pool=1.0)
    memos_emulator.add_fault("/create/knowledgebase", latency_ms=1200, times=1)
    with make_client(memos_emulator, timeout=timeout) as client:
        started = time.monotonic()
        with pytest.raises(MemosUnavailable) as caught:
            client.create_knowledgebase("slow")
        assert time.monotonic() - started < 1.0
    assert caught.value.request_sent is True
    assert calls(memos_emulator, "/create/knowledgebase") == 1


def test_a_slow_search_is_retried_within_its_timeout(memos_emulator: Any) -> None:
    # The KB is made with the default timeouts: only the search runs against the short one. The read
    # timeout leaves a busy machine room for the retry, and the fault outlasts it several times over.
    with make_client(memos_emulator) as setup:
        kb_id = setup.create_knowledgebase("x")
    timeout = httpx.Timeout(connect=1.0, read=1.0, write=1.0, pool=1.0)
    with make_client(memos_emulator, timeout=timeout, max_attempts=2) as client:
        memos_emulator.add_fault("/search/memory", latency_ms=3000, times=1)
        assert client.search_memory("r", "q", [kb_id]) == []
    assert calls(memos_emulator, "/search/memory") == 2


def test_nothing_listening_is_unavailable_without_sending(memos_emulator: Any) -> None:
    with (
        MemosClient(
            "http://127.0.0.1:9/api/openmem/v1", RecordingKeys("k"), max_attempts=2, sleep=lambda _s: None
        ) as client,
        pytest.raises(MemosUnavailable) as caught,
    ):
        client.create_knowledgebase("x")
    assert caught.value.request_sent is False


# -- /update/knowledgebase-file: what we assume where MemOS documents nothing -------------------------
#
# MemOS documents the request (a file id and the new content) and that processing is asynchronous, as
# for an add. Each test below pins one assumption of docs/memos.md ("Updating a file") that the service
# is built on: run against the real MemOS, a failure here names the assumption to revisit.

OLD_TEXT = b"# Price list\n\nThe penguin plan costs one hundred yuan a month.\n"
NEW_TEXT = b"# Price list\n\nThe walrus plan costs two hundred yuan a month.\n"


def answers(client: MemosClient, kb_id: str, word: str) -> list[str]:
    return [h.content for h in client.search_memory("kb-reader-u1", word, [kb_id], relativity=0) if word in h.content]


def processed_file(client: MemosClient, text: bytes = OLD_TEXT) -> tuple[str, str]:
    kb_id = client.create_knowledgebase("versions")
    [file] = upload(client, kb_id, markdown(text, "price.md"))
    assert file.status is FileStatus.AVAILABLE
    return kb_id, file.id


def test_assumed_an_update_answers_the_same_file_processing_and_keeps_its_name_as_sent(
    client: MemosClient, memos_emulator: Any
) -> None:
    _, file_id = processed_file(client)
    memos_emulator.pause_processing()
    updated = client.update_knowledgebase_file(file_id, markdown(NEW_TEXT, "price [up_2].md"))
    assert (updated.id, updated.status) == (file_id, FileStatus.PROCESSING)
    [seen] = client.get_knowledgebase_files([file_id])
    assert (seen.status, seen.name) == (FileStatus.PROCESSING, "price [up_2].md")


def test_assumed_the_previous_version_answers_until_the_next_is_processed_then_only_the_next(
    client: MemosClient, memos_emulator: Any
) -> None:
    kb_id, file_id = processed_file(client)
    memos_emulator.pause_processing()
    client.update_knowledgebase_file(file_id, markdown(NEW_TEXT, "price.md"))
    assert answers(client, kb_id, "penguin")
    assert not answers(client, kb_id, "walrus")
    memos_emulator.pause_processing(False)
    assert wait_until_settled(client, [file_id])[0].status is FileStatus.AVAILABLE
    assert answers(client, kb_id, "walrus")
    assert not answers(client, kb_id, "penguin")
    assert [f.id for f in client.iter_knowledgebase_files(kb_id)] == [file_id]


def test_assumed_a_version_that_fails_shows_failed_and_leaves_the_previous_one_answering(
    client: MemosClient,
) -> None:
    kb_id, file_id = processed_file(client)
    client.update_knowledgebase_file(
        file_id, FileInput.from_bytes(b"not a pdf at all", name="price.pdf", mime_type="application/pdf")
    )
    assert wait_until_settled(client, [file_id])[0].status is FileStatus.FAILED
    assert answers(client, kb_id, "penguin")


def test_assumed_the_same_content_sent_twice_ends_as_one_version_answering_once(client: MemosClient) -> None:
    kb_id, file_id = processed_file(client)
    client.update_knowledgebase_file(file_id, markdown(NEW_TEXT, "price.md"))
    client.update_knowledgebase_file(file_id, markdown(NEW_TEXT, "price.md"))
    wait_until_settled(client, [file_id])
    assert len(answers(client, kb_id, "walrus")) == 1
    assert not answers(client, kb_id, "penguin")


def test_assumed_the_last_update_received_is_the_version_that_stays(
    client: MemosClient, memos_emulator: Any
) -> None:
    kb_id, file_id = processed_file(client)
    memos_emulator.pause_processing()
    client.update_knowledgebase_file(file_id, markdown(NEW_TEXT, "price.md"))
    client.update_knowledgebase_file(file_id, markdown(b"# Price list\n\nThe badger plan is free.\n", "price.md"))
    memos_emulator.pause_processing(False)
    wait_until_settled(client, [file_id])
    assert answers(client, kb_id, "badger")
    assert not answers(client, kb_id, "walrus")
    assert not answers(client, kb_id, "penguin")


def test_assumed_an_update_of_a_deleted_unknown_or_unlinked_file_is_not_found(client: MemosClient) -> None:
    kb_id, file_id = processed_file(client)
    other_kb, other_file = processed_file(client)
    client.delete_knowledgebase_files([file_id])
    client.delete_knowledgebase(other_kb, delete_all=False)
    for gone in (file_id, "0" * 32, other_file):
        with pytest.raises(MemosNotFound):
            client.update_knowledgebase_file(gone, markdown(NEW_TEXT, "price.md"))
    assert list(client.iter_knowledgebase_files(kb_id)) == []


def test_an_update_is_repeated_after_a_transient_fault(memos_emulator: Any) -> None:
    with make_client(memos_emulator, max_attempts=3) as client:
        kb_id, file_id = processed_file(client)
        memos_emulator.add_fault("/update/knowledgebase-file", code=50004, times=1)
        assert client.update_knowledgebase_file(file_id, markdown(NEW_TEXT, "price.md")).id == file_id
        wait_until_settled(client, [file_id])
        assert answers(client, kb_id, "walrus")
    assert calls(memos_emulator, "/update/knowledgebase-file") == 2

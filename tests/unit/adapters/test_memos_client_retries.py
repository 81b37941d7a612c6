"""MemosClient against ``httpx.MockTransport``: which calls are retried and how (backoff, jitter,
``Retry-After``), the API key refreshed once on an auth error, and no secret in logs or errors."""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Callable
from http import HTTPStatus

import httpx
import pytest

from memmy_kb.adapters.memos.client import MemosClient
from memmy_kb.domain.engine import (
    FileInput,
    MemosAuthError,
    MemosError,
    MemosRateLimited,
    MemosUnavailable,
)
from tests.support.memos_http import (
    API_KEY,
    BASE_URL,
    FILE_ID,
    KB_ID,
    NEW_API_KEY,
    FixedRandom,
    Reply,
    envelope,
    file_item,
    harness,
    memory_item,
    memos_error,
)

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

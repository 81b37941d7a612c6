"""MemosClient against ``httpx.MockTransport``: MemOS's error codes and HTTP statuses, each mapped to its
family; transport failures; deletes of what is already gone."""

from __future__ import annotations

from http import HTTPStatus

import httpx
import pytest

from memmy_kb.adapters.memos.client import MemosClient
from memmy_kb.domain.engine import (
    MemosAuthError,
    MemosError,
    MemosFileTooLarge,
    MemosNotFound,
    MemosQuotaExceeded,
    MemosRateLimited,
    MemosRejectedInput,
    MemosUnavailable,
    MemosUnsupportedFile,
)
from tests.support.memos_http import (
    API_KEY,
    BASE_URL,
    FILE_ID,
    KB_ID,
    envelope,
    harness,
    memos_error,
)

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

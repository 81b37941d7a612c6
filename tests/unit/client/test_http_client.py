"""``memmy_kb_client.http_client``: every reply read one way (``classify``, ``read_error``), and what the
one HTTP client sends again on a kept-alive connection the server had dropped."""

from __future__ import annotations

import http.client
import json
from typing import Any

import httpx
import pytest

from memmy_kb_client.http_client import (
    BAD_REPLY,
    CLOUD_ERROR,
    OK,
    TIMEOUT,
    UNAUTHORIZED,
    UNREACHABLE,
    ApiError,
    HttpClient,
    classify,
    failed,
    read_error,
)
from tests.support.mock_http import MockConnection


def body(value: Any) -> bytes:
    return json.dumps(value).encode()


@pytest.mark.parametrize(
    ("status", "data", "outcome", "answer"),
    [
        (200, body({"items": []}), OK, {"items": []}),
        (204, b"", OK, {}),
        (200, b"<html>", BAD_REPLY, None),
        (401, body({"message": "Unauthorized"}), UNAUTHORIZED, None),
        (403, body({"error": {"code": "forbidden", "message": "no"}}), UNAUTHORIZED, None),
        (503, body({"error": {"code": "recall_unavailable", "message": "later"}}), CLOUD_ERROR, None),
    ],
)
def test_a_reply_is_classified_by_its_status_and_body(status, data, outcome, answer):
    result = classify(status, data)
    assert (result.outcome, result.status, result.answer) == (outcome, status, answer)
    assert (result.error is not None) is (status >= 400)


def test_the_error_format_is_read_whole_and_anything_else_as_http_error():
    details = {"limit": 50}
    assert read_error(422, body({"error": {"code": "too_many", "message": "at most 50", "details": details}})) == (
        ApiError(422, "too_many", "at most 50", details)
    )
    # API Gateway's own 401, an HTML page, nothing: what can be said, else the reason phrase.
    assert read_error(401, body({"message": "Unauthorized"})) == ApiError(401, "http_error", "Unauthorized")
    assert read_error(502, b"<html>Bad gateway</html>", "Bad Gateway") == ApiError(502, "http_error", "Bad Gateway")
    assert read_error(500, b"", "Internal Server Error").message == "Internal Server Error"
    assert ApiError(422, "c", "m", details).as_json() == {"error": {"code": "c", "message": "m", "details": details}}


def test_no_reply_is_a_timeout_or_unreachable():
    assert failed(TimeoutError()).outcome == TIMEOUT
    assert failed(ConnectionRefusedError()).outcome == UNREACHABLE
    assert failed(ConnectionRefusedError()).detail == "ConnectionRefusedError"


class DropsOnReuse(MockConnection):
    """A kept-alive connection that the server closes after its first reply."""

    def __init__(self, seen: list[str]) -> None:
        super().__init__(self.answer, "http://cloud.test")
        self.seen, self.used = seen, 0

    def answer(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request.method)
        return httpx.Response(200, json={"n": len(self.seen)})

    def request(self, method: str, url: str, body: bytes | None = None, headers: Any = None) -> None:
        self.used += 1
        if self.used > 1:
            raise http.client.RemoteDisconnected("closed while idle")
        super().request(method, url, body, headers)


def client_dropping(seen: list[str]) -> HttpClient:
    return HttpClient("http://cloud.test", timeout=1, connect=lambda: DropsOnReuse(seen))  # type: ignore[arg-type, return-value]


def test_a_dropped_idle_connection_is_tried_once_more_when_repeating_is_harmless():
    seen: list[str] = []
    client = client_dropping(seen)
    assert client.call("GET", "/a").answer == {"n": 1}
    assert client.call("GET", "/b").answer == {"n": 2}  # the idle connection dropped: sent on a new one
    assert client.call("POST", "/recall", json_body={}, retry=True).outcome == OK


def test_a_post_without_an_idempotency_key_is_not_sent_twice():
    seen: list[str] = []
    client = client_dropping(seen)
    client.call("GET", "/a")
    assert client.call("POST", "/knowledge-bases", json_body={"name": "x"}).outcome == UNREACHABLE
    assert seen == ["GET"]
    assert client.call("POST", "/x", json_body={}, headers={"Idempotency-Key": "k"}).outcome == OK


def test_a_name_taken_refusal_reaches_the_sdk_caller_with_its_sibling() -> None:
    from memmy_kb_client.http_client import HttpClient, Reply
    from memmy_kb_client.sdk import ClientConfig, MemmyApiError, MemmyClient

    body = {
        "error": {
            "code": "name_taken",
            "message": "A file named 'lead.md' is already in this folder. Replace it, or choose another name.",
            "details": {"kind": "file", "id": "fi_1", "name": "lead.md"},
        }
    }

    class Answers(HttpClient):
        def send_json(self, *args: Any, **kwargs: Any) -> Reply:
            return Reply(409, json.dumps(body).encode())

    client = MemmyClient(
        ClientConfig(endpoint="http://127.0.0.1:9", token="t"), http=Answers("http://127.0.0.1:9", timeout=1.0)
    )
    with pytest.raises(MemmyApiError) as refused:
        client.request_upload("kb_1", "lead.md", 5)

    assert (refused.value.status, refused.value.code) == (409, "name_taken")
    assert refused.value.details == {"kind": "file", "id": "fi_1", "name": "lead.md"}

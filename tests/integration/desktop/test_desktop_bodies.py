"""The desktop service guards request bodies as the cloud does, on each kind of route (the hook's recall,
the commands' control routes, the page's ``/api`` proxy): a flood is 413, JSON nested 30,000 deep or
bytes that are not UTF-8 are 422, a type other than JSON is 415, each in the service's error shape and
before anything reaches the cloud; a JSON type in any case is JSON. Never a 500."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from email.message import Message
from typing import Any

import pytest

from memmy_kb_client.desktop import bodies
from memmy_kb_client.desktop.handler import dispatch
from memmy_kb_client.desktop.server import DesktopService
from tests.support.desktop_page import RecordingCloud, call, cloud, service, signed_in
from tests.support.desktop_service import CLOUD_TOKEN
from tests.support.hostile_bodies import SHAPES
from tests.support.linear_time import assert_linear_time

__all__ = ["cloud", "service"]  # the fixtures, shared with the page's tests

DEEP = b'{"query": ' + b"[" * 30_000 + b"]" * 30_000 + b', "token": "t", "name": "x"}'
TEN_MB = 10 * 1024 * 1024


def _hook(service: DesktopService) -> tuple[str, dict[str, str], dict[str, Any]]:
    return "/hook/recall", {"Authorization": f"Bearer {service.state.hook_token}"}, {"query": "差旅", "agent": None}


def _control(service: DesktopService) -> tuple[str, dict[str, str], dict[str, Any]]:
    return "/control/login", {"Authorization": f"Bearer {service.state.control_token}"}, {"token": CLOUD_TOKEN}


def _page(service: DesktopService) -> tuple[str, dict[str, str], dict[str, Any]]:
    return "/api/knowledge-bases", signed_in(service), {"name": "资料"}


ROUTE_KINDS: dict[str, Callable[[DesktopService], tuple[str, dict[str, str], dict[str, Any]]]] = {
    "hook": _hook,
    "control": _control,
    "page": _page,
}


def post(service: DesktopService, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
    return send(service, "POST", path, headers, body)


def send(
    service: DesktopService, method: str, path: str, headers: dict[str, str], body: bytes
) -> tuple[int, dict[str, Any]]:
    # ``call`` sends JSON as application/json; these bodies and types are sent as they are.
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=10)
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, json.loads(data) if data else {}


def cloud_posts(cloud: RecordingCloud, kind: str) -> list[dict[str, Any]]:
    # The hook's recall asks the cloud's /recall; the page's create is sent on to /knowledge-bases.
    return [r for r in cloud.requests if r["method"] == "POST" and (kind != "page" or r["path"] == "/knowledge-bases")]


@pytest.mark.parametrize(
    ("content_type", "body", "status", "code"),
    [
        ("application/json", DEEP, 422, "validation_error"),
        ("application/json", b'{"query": "\xff\xfe", "token": "\xff", "name": "\xff"}', 422, "validation_error"),
        ("text/plain", None, 415, "unsupported_media_type"),
        ("Text/Plain;charset=UTF-8", None, 415, "unsupported_media_type"),
        ("Application/JSON; Charset=Latin-1", None, 415, "unsupported_media_type"),
        ("application/x-www-form-urlencoded", b"query=x&token=t&name=x", 415, "unsupported_media_type"),
    ],
)
@pytest.mark.parametrize("kind", list(ROUTE_KINDS))
def test_a_bad_body_is_a_4xx_in_the_error_shape_before_the_cloud(service, cloud, kind, content_type, body, status, code):
    path, headers, good = ROUTE_KINDS[kind](service)
    before = len(cloud_posts(cloud, kind))
    raw = body if body is not None else json.dumps(good).encode()
    answer = post(service, path, {**headers, "Content-Type": content_type}, raw)
    assert answer[0] == status, answer
    assert set(answer[1]) == {"error"}
    assert answer[1]["error"]["code"] == code
    assert len(cloud_posts(cloud, kind)) == before


@pytest.mark.parametrize(
    "content_type", ["Application/JSON", "APPLICATION/JSON; Charset=UTF-8", 'application/Json;charset="utf8"']
)
@pytest.mark.parametrize("kind", list(ROUTE_KINDS))
def test_a_json_type_in_any_case_is_json(service, cloud, kind, content_type):
    path, headers, good = ROUTE_KINDS[kind](service)
    status, answer = post(service, path, {**headers, "Content-Type": content_type}, json.dumps(good).encode())
    assert status == 200, answer
    if kind == "page":
        assert json.loads(cloud_posts(cloud, kind)[-1]["body"]) == good


@pytest.mark.parametrize("kind", list(ROUTE_KINDS))
def test_a_10_mb_body_is_413_by_its_length_unread(service, cloud, kind):
    path, headers, _ = ROUTE_KINDS[kind](service)
    lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{service.port}", f"Content-Length: {TEN_MB}",
             "Content-Type: application/json", *(f"{k}: {v}" for k, v in headers.items())]
    with socket.create_connection(("127.0.0.1", service.port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + b'{"query": "' + b"x" * 65_536)
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            chunk = sock.recv(65_536)
            if not chunk:
                break
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), reply[:200]
    assert b"Connection: close" in head
    assert json.loads(body)["error"]["code"] == "body_too_large"
    assert cloud_posts(cloud, kind) == []


def test_brackets_inside_strings_do_not_count_as_depth(service, cloud):
    path, headers, _ = _page(service)
    status, _ = post(service, path, {**headers, "Content-Type": "application/json"},
                     json.dumps({"name": "[{" * 5000}).encode())
    assert status == 200
    assert call(service, "GET", "/api/session", headers)[0] == 200


@pytest.mark.parametrize(
    ("method", "path", "token"),
    [("POST", "/hook/recall", "hook"), ("GET", "/", None), ("GET", "/callback", None)],
    ids=["hook-recall", "page-without-token", "callback-without-token"],
)
def test_a_63_kb_body_of_escaped_quotes_is_a_quick_422(service, cloud, method, path, token):
    # Given a body that is one unterminated string of escaped quotes (which held the service 15 s), on the
    # hook's recall and on the routes that need no token, and the same shape in 1 KB
    make = SHAPES["unterminated escaped quotes"]
    headers = {"Content-Type": "application/json"}
    if token == "hook":
        headers["Authorization"] = f"Bearer {service.state.hook_token}"
    # Then the 63 KB body costs at most its share of the 1 KB one's time over HTTP (linear), with room
    assert_linear_time(
        lambda body: send(service, method, path, headers, body), lambda size: make(size).encode(), large=63 * 1024
    )
    # And it is the documented 422 in the error shape, before the cloud
    status, answer = send(service, method, path, headers, make(63 * 1024).encode())
    assert (status, set(answer), answer["error"]["code"]) == (422, {"error"}, "validation_error")
    assert cloud.requests == []


def test_a_body_is_neither_read_nor_checked_when_the_credential_is_refused(service, monkeypatch):
    checked: list[bytes] = []
    monkeypatch.setattr(bodies, "refusal", lambda content_type, body: checked.append(body))
    read: list[str] = []

    def answer(path: str, authorization: str | None) -> int:
        headers = Message()
        headers["Host"] = f"127.0.0.1:{service.port}"
        if authorization is not None:
            headers["Authorization"] = authorization

        def read_body() -> bytes:
            read.append(path)
            return SHAPES["unterminated escaped quotes"](63 * 1024).encode()

        return dispatch(service.state, service.port, "POST", path, headers, read_body).status

    assert answer("/hook/recall", None) == 401
    assert answer("/hook/recall", "Bearer guessed") == 401
    assert answer("/control/login", f"Bearer {service.state.hook_token}") == 403
    assert answer("/api/knowledge-bases", f"Bearer {service.state.control_token}") == 403
    assert (read, checked) == ([], [])

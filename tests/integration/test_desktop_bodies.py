"""The desktop service guards request bodies as the cloud does, on each kind of route (the hook's recall,
the commands' control routes, the page's ``/api`` proxy): a flood is 413, JSON nested 30,000 deep or
bytes that are not UTF-8 are 422, a type other than JSON is 415, each in the service's error shape and
before anything reaches the cloud; a JSON type in any case is JSON. Never a 500."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import pytest

from memmy_kb_client.desktop.server import DesktopService
from tests.integration.test_desktop_page import CLOUD_TOKEN, RecordingCloud, call, cloud, service, signed_in

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
    # ``call`` sends JSON as application/json; these bodies and types are sent as they are.
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=10)
    connection.request("POST", path, body=body, headers=headers)
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

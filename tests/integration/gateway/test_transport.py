"""The local gateway over real HTTP: its framing of requests and responses, and concurrent requests, each
function's containers running at once."""

from __future__ import annotations

import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from memmy_local import tokens
from memmy_local.gateway.http_events import EventContext, GatewayRequest, build_event
from memmy_local.gateway.server import Gateway
from tests.support.gateway_functions import bearer, echoed
from tests.support.polling import wait_until

# ------------------------------------------------------------------------------------- framing


def _raw_exchange(gateway: Gateway, head: bytes, body: bytes = b"") -> bytes:
    """Send exactly ``head`` and ``body`` and read until the gateway closes or 5 s pass."""
    host, port = urlsplit(gateway.url).hostname, urlsplit(gateway.url).port
    with socket.create_connection((host, port), timeout=5) as conn:
        conn.sendall(head + body)
        received = b""
        try:
            while chunk := conn.recv(65536):
                received += chunk
                if b"\r\n\r\n" in received:
                    break
        except TimeoutError:
            pass
    return received


@pytest.mark.parametrize(
    "length_headers",
    [b"Content-Length: -5\r\n", b"Content-Length: abc\r\n", b"Content-Length: 3\r\nContent-Length: 4\r\n", b"Content-Length: 1e3\r\n"],
    ids=["negative", "not-a-number", "two-values", "exponent"],
)
def test_a_bad_content_length_is_400_at_once(gateway: Gateway, token: str, length_headers: bytes) -> None:
    head = (
        b"POST /items HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + token.encode() + b"\r\n"
        + length_headers + b"Content-Type: application/json\r\n\r\n"
    )
    started = time.monotonic()
    reply = _raw_exchange(gateway, head, b"{}")
    assert reply.startswith(b"HTTP/1.1 400"), reply[:200]
    assert time.monotonic() - started < 2


def test_a_bad_chunk_size_is_400(gateway: Gateway, token: str) -> None:
    head = (
        b"POST /items HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + token.encode() + b"\r\n"
        b"Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
    )
    reply = _raw_exchange(gateway, head, b"zz\r\n{}\r\n0\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400"), reply[:200]


@pytest.mark.parametrize("method", ["TRACE", "CONNECT", "PROPFIND"])
def test_any_method_reaches_the_routing_and_gets_its_404(client: httpx.Client, token: str, method: str) -> None:
    resp = client.request(method, "/items", headers=bearer(token))
    assert resp.status_code == HTTPStatus.NOT_FOUND
    assert resp.headers["content-type"].startswith("application/json")


# ------------------------------------------------------------------------------------- concurrency


def _get(gateway: Gateway, path: str, token: str) -> httpx.Response:
    with httpx.Client(base_url=gateway.url, timeout=30) as http:
        return http.get(path, headers=bearer(token))


def _get_all(gateway: Gateway, requests: list[tuple[str, str]]) -> list[httpx.Response]:
    """GET every (path, token) at once, each on its own connection; the responses in the same order."""
    with ThreadPoolExecutor(max_workers=len(requests)) as executor:
        return list(executor.map(lambda request: _get(gateway, *request), requests))


def _log_lines(pool: Any, message: str) -> list[dict[str, Any]]:
    return [line for line in map(json.loads, pool.LOG.lines) if line["message"] == message]


def test_concurrent_requests_to_one_function_run_at_once(gateway: Gateway, pool: Any, token: str) -> None:
    pool.BARRIER = threading.Barrier(2)

    responses = _get_all(gateway, [("/pool/a?mode=meet", token), ("/pool/b?mode=meet", token)])

    first, second = (echoed(resp) for resp in responses)
    # Each invocation passed a barrier that only the other one could open: they were in the handler
    # together (one container at a time would have broken the barrier after its 10 s).
    assert max(first["entered"], second["entered"]) < min(first["left"], second["left"])
    assert pool.ACTIVE["max"] == 2
    containers = gateway.functions["PoolFunction"].containers
    assert len(containers) >= 2
    # Each container runs its own copy of the handler module, hence its own resolver.
    assert len({container.handler.__module__ for container in containers if container.handler}) == len(
        containers
    )


def test_concurrent_requests_each_get_their_own_answer_log_lines_and_metrics(
    gateway: Gateway, pool: Any, key_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    users = ("alice", "bob", "carol")
    user_tokens = {user: tokens.issue_token(user, key_path=key_path) for user in users}
    # Four at a time, as many as the pool's containers: each request meets three others mid-handler.
    pool.BARRIER = threading.Barrier(gateway.config.max_containers)
    requests = [(f"/pool/t{i}?mode=meet", user_tokens[users[i % 3]]) for i in range(12)]

    responses = _get_all(gateway, requests)

    assert pool.ACTIVE["max"] == gateway.config.max_containers
    for i, resp in enumerate(responses):
        seen = echoed(resp)
        request_id = resp.headers["apigw-requestid"]
        assert seen["tag"] == seen["path_tag"] == f"t{i}"
        assert seen["caller"] == users[i % 3]
        assert seen["request_id"] == seen["correlation_id"] == seen["aws_request_id"] == request_id
        assert seen["function_name"] == "memmy-test-pool"
    # Every log line carries its own invocation's keys (Logger.inject_lambda_context's).
    working = {line["tag"]: line for line in _log_lines(pool, "working")}
    assert sorted(working) == sorted(f"t{i}" for i in range(12))
    for i, resp in enumerate(responses):
        line = working[f"t{i}"]
        assert line["correlation_id"] == line["function_request_id"] == resp.headers["apigw-requestid"]
        assert line["function_name"] == "memmy-test-pool"
    # Every invocation flushes exactly its own metrics, from both instances (one EMF document each).
    documents = [json.loads(out) for out in capsys.readouterr().out.splitlines() if '"_aws"' in out]
    flushed = sorted(
        tuple(sorted(metric["Name"] for metric in document["_aws"]["CloudWatchMetrics"][0]["Metrics"]))
        for document in documents
    )
    assert flushed == sorted((f"also_t{i}", f"seen_t{i}") for i in range(12))


def test_requests_beyond_the_pool_wait_for_a_free_container(gateway: Gateway, pool: Any, token: str) -> None:
    function = gateway.functions["PoolFunction"]
    cap = function.max_containers
    with ThreadPoolExecutor(max_workers=cap + 2) as executor:
        futures = [executor.submit(_get, gateway, f"/pool/h{i}?mode=hold", token) for i in range(cap + 2)]
        wait_until(lambda: pool.ACTIVE["now"] >= cap, timeout=10, interval=0.01, message=f"{cap} active containers")
        time.sleep(0.2)  # every chance for the two others to get in, were they not waiting
        assert pool.ACTIVE["now"] == cap
        assert len(function.containers) == cap
        pool.RELEASE.set()
        responses = [future.result() for future in futures]

    assert [resp.status_code for resp in responses] == [HTTPStatus.OK] * (cap + 2)
    assert pool.ACTIVE["max"] == cap
    assert sorted(echoed(resp)["tag"] for resp in responses) == sorted(f"h{i}" for i in range(cap + 2))


def test_concurrent_requests_to_two_functions_keep_their_own_events(
    gateway: Gateway, pool: Any, key_path: Path
) -> None:
    # Both functions' routers live in one shared module, as ours do in the core layer.
    pool.BARRIER = threading.Barrier(2)
    alice = tokens.issue_token("alice", key_path=key_path)
    bob = tokens.issue_token("bob", key_path=key_path)

    responses = _get_all(gateway, [("/pool/p?mode=meet", alice), ("/other/o?mode=meet", bob)])

    pool_seen, other_seen = (echoed(resp) for resp in responses)
    assert (pool_seen["path_tag"], pool_seen["caller"], pool_seen["function_name"]) == (
        "p",
        "alice",
        "memmy-test-pool",
    )
    assert (other_seen["path_tag"], other_seen["caller"], other_seen["function_name"]) == (
        "o",
        "bob",
        "memmy-test-other-pool",
    )
    lines = {line["tag"]: line for line in _log_lines(pool, "working")}
    assert lines["p"]["function_name"] == "memmy-test-pool"
    assert lines["o"]["function_name"] == "memmy-test-other-pool"
    assert lines["p"]["correlation_id"] == responses[0].headers["apigw-requestid"]
    assert lines["o"]["correlation_id"] == responses[1].headers["apigw-requestid"]


def test_outside_containers_powertools_state_is_the_process_own(
    gateway: Gateway, pool: Any, token: str
) -> None:
    echoed(_get(gateway, "/pool/inside", token))
    # What the containers' invocations appended stayed in the containers.
    assert pool.logger.get_correlation_id() is None

    # A handler called directly, as unit tests do, works on the process's state as it always did.
    function = gateway.functions["PoolFunction"]
    assert function.handler is not None
    request = GatewayRequest("GET", "/pool/direct", "", [("host", "localhost")], b"", "127.0.0.1")
    event = build_event(
        request, EventContext("GET /pool/{tag}", "direct-1", time.time()), {"tag": "direct"}, {"sub": "dave"}
    )
    result = function.handler(event, function.context("direct-1"))

    assert json.loads(result["body"])["caller"] == "dave"
    assert pool.logger.get_correlation_id() == "direct-1"
    pool.logger.set_correlation_id(None)

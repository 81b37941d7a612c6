"""The local gateway over real HTTP: the payload 2.0 event a function gets, and the responses it sends back."""

from __future__ import annotations

import base64
import json
import time
from http import HTTPStatus

import httpx
import pytest

from memmy_local.gateway.server import Gateway
from tests.support.gateway_functions import bearer, echoed

# ---------------------------------------------------------------------------------------- the event


def test_event_has_the_payload_2_0_shape(client: httpx.Client, token: str, gateway: Gateway) -> None:
    resp = client.post(
        "/items",
        headers={
            **bearer(token),
            "User-Agent": "memmy-test/1",
            "X-Dup": "one",
            "Cookie": "session=abc; theme=dark",
        },
        json={"name": "x"},
    )
    event = echoed(resp)["event"]

    assert event["version"] == "2.0"
    assert event["routeKey"] == "POST /items"
    assert event["cookies"] == ["session=abc", "theme=dark"]
    assert "cookie" not in event["headers"]
    assert event["headers"]["user-agent"] == "memmy-test/1"
    assert event["headers"]["content-type"] == "application/json"
    assert event["headers"]["x-forwarded-for"] == "127.0.0.1"
    assert all(name == name.lower() for name in event["headers"])
    assert json.loads(event["body"]) == {"name": "x"}
    assert event["isBase64Encoded"] is False
    context = event["requestContext"]
    assert context["accountId"] == "123456789012"
    assert context["domainName"] == f"127.0.0.1:{gateway.port}"
    assert context["http"] == {
        "method": "POST",
        "path": "/items",
        "protocol": "HTTP/1.1",
        "sourceIp": "127.0.0.1",
        "userAgent": "memmy-test/1",
    }
    assert context["routeKey"] == "POST /items"
    assert context["stage"] == "$default"
    assert context["requestId"] == resp.headers["apigw-requestid"]
    assert abs(context["timeEpoch"] / 1000 - time.time()) < 60
    assert context["time"].endswith(" +0000")


def test_duplicate_headers_are_comma_joined(client: httpx.Client, token: str) -> None:
    headers = [("Authorization", f"Bearer {token}"), ("X-Dup", "one"), ("X-Dup", "two")]

    event = echoed(client.get("/items", headers=headers))["event"]

    assert event["headers"]["x-dup"] == "one,two"


def test_binary_body_is_base64_encoded(client: httpx.Client, token: str) -> None:
    payload = bytes(range(256))
    headers = {**bearer(token), "Content-Type": "application/octet-stream"}

    event = echoed(client.post("/items", headers=headers, content=payload))["event"]

    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == payload


def test_text_body_is_passed_as_is(client: httpx.Client, token: str) -> None:
    headers = {**bearer(token), "Content-Type": "text/plain; charset=utf-8"}

    event = echoed(client.post("/items", headers=headers, content="知识库".encode()))["event"]

    assert event["isBase64Encoded"] is False
    assert event["body"] == "知识库"


def test_context_and_environment_come_from_the_template(client: httpx.Client, token: str) -> None:
    seen = echoed(client.get("/items", headers=bearer(token)))

    context = seen["context"]
    assert context["function_name"] == "memmy-test-echo"
    assert context["memory_limit_in_mb"] == 512
    assert context["invoked_function_arn"] == "arn:aws:lambda:us-east-1:123456789012:function:memmy-test-echo"
    assert context["log_group_name"] == "/aws/lambda/memmy-test-echo"
    assert context["aws_request_id"] == seen["event"]["requestContext"]["requestId"]
    assert 0 < context["remaining_ms"] <= 7000
    assert seen["env"] == {"TABLE_NAME": "memmy-test-table", "SERVICE_AT_IMPORT": "echo-service"}


# ------------------------------------------------------------------------------------------ responses


def test_base64_response_is_decoded(client: httpx.Client, token: str) -> None:
    resp = client.get("/items?mode=binary", headers=bearer(token))

    assert resp.status_code == HTTPStatus.OK
    assert resp.headers["content-type"] == "application/octet-stream"
    assert resp.content == bytes(range(256))


def test_cookies_become_set_cookie_headers(client: httpx.Client, token: str) -> None:
    resp = client.get("/items?mode=cookies", headers=bearer(token))

    assert resp.status_code == HTTPStatus.NO_CONTENT
    assert resp.headers.get_list("set-cookie") == ["a=1; Path=/", "b=2"]


def test_a_public_route_answers_a_redirect_with_its_cookie_as_sent(client: httpx.Client) -> None:
    # As the MCP authorization server's /oauth/authorize: no token, a 302 the gateway never follows.
    resp = client.get("/health?mode=redirect")

    assert resp.status_code == HTTPStatus.FOUND
    assert resp.headers["location"] == "https://login.example/authorize?state=s1"
    assert resp.headers["cache-control"] == "no-store"
    assert resp.headers.get_list("set-cookie") == [
        "__Host-memmy-oauth=c1; Secure; HttpOnly; SameSite=Lax; Path=/; Max-Age=600"
    ]


def test_an_html_page_keeps_its_type_and_policy(client: httpx.Client) -> None:
    resp = client.get("/health?mode=page")

    assert resp.status_code == HTTPStatus.BAD_REQUEST
    assert resp.headers["content-type"] == "text/html; charset=utf-8"
    assert resp.headers["content-security-policy"] == "default-src 'none'"
    assert resp.text == "<!doctype html><p>允许 Claude？</p>"


def test_a_form_post_reaches_the_function_base64_encoded_with_its_cookie(client: httpx.Client, token: str) -> None:
    # As a consent page's answer: a form body (not text to API Gateway, so base64) and the browser's cookie.
    resp = client.post(
        "/items",
        headers={**bearer(token), "Cookie": "__Host-memmy-oauth=c1"},
        data={"request": "r1", "decision": "allow"},
    )
    event = echoed(resp)["event"]

    assert event["headers"]["content-type"] == "application/x-www-form-urlencoded"
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == b"request=r1&decision=allow"
    assert event["cookies"] == ["__Host-memmy-oauth=c1"]


def test_non_proxy_result_is_json_with_200(client: httpx.Client, token: str) -> None:
    resp = client.get("/items?mode=plain", headers=bearer(token))

    assert resp.status_code == HTTPStatus.OK
    assert resp.json() == ["not", "a", "proxy", "response"]


@pytest.mark.parametrize("mode", ["raise", "unserialisable", "body-not-string"])
def test_handler_failure_is_500_without_details(
    client: httpx.Client, token: str, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    resp = client.get(f"/items?mode={mode}", headers=bearer(token))

    assert resp.status_code == HTTPStatus.INTERNAL_SERVER_ERROR
    assert resp.json() == {"message": "Internal Server Error"}
    assert any(record.exc_info for record in caplog.records if record.name == "memmy_local.gateway")


def test_function_that_cannot_load_answers_500(client: httpx.Client, token: str, gateway: Gateway) -> None:
    resp = client.get("/broken", headers=bearer(token))

    assert resp.status_code == HTTPStatus.INTERNAL_SERVER_ERROR
    assert resp.json() == {"message": "Internal Server Error"}
    assert "this function cannot start" in (gateway.functions["BrokenFunction"].load_error or "")


def test_one_log_line_per_request_without_token_or_query(
    client: httpx.Client, token: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="memmy_local.gateway")

    client.get("/items/kb1?secret-query=x", headers=bearer(token))

    lines = [r.getMessage() for r in caplog.records if r.name == "memmy_local.gateway"]
    assert len(lines) == 1
    assert lines[0].startswith("GET /items/kb1 200 ")
    assert token not in lines[0]
    assert "secret-query" not in lines[0]

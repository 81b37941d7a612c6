"""The local gateway over real HTTP: template routes, the JWT authorizer's refusals, payload 2.0 events."""

from __future__ import annotations

import base64
import json
import socket
import sys
import textwrap
import time
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from memmy_local import tokens
from memmy_local.gateway import Gateway, GatewayConfig, JwtAuthorizer
from memmy_local.template import function_environment, load_template

ISSUER = "memmy-local"
AUDIENCE = "memmy-kb"
REFS = {"AWS::StackName": "memmy-test", "Table": "memmy-test-table", "JwtIssuer": ISSUER}

TEMPLATE = """\
    Parameters:
      JwtIssuer:
        Type: String
    Globals:
      Function:
        Timeout: 7
        MemorySize: 512
        Environment:
          Variables:
            TABLE_NAME: !Ref Table
            POWERTOOLS_SERVICE_NAME: global-service
    Resources:
      Table:
        Type: AWS::DynamoDB::Table
      EchoFunction:
        Type: AWS::Serverless::Function
        Properties:
          FunctionName: !Sub ${AWS::StackName}-echo
          CodeUri: functions/echo/
          Handler: app.lambda_handler
          Environment:
            Variables:
              POWERTOOLS_SERVICE_NAME: echo-service
          Events:
            ListItems:
              Type: HttpApi
              Properties: {Method: GET, Path: /items}
            CreateItem:
              Type: HttpApi
              Properties: {Method: post, Path: /items}
            GetItem:
              Type: HttpApi
              Properties: {Method: GET, Path: "/items/{item_id}"}
            GetMember:
              Type: HttpApi
              Properties: {Method: GET, Path: "/items/{item_id}/members/{user_id}"}
            Health:
              Type: HttpApi
              Properties:
                Method: GET
                Path: /health
                Auth:
                  Authorizer: NONE
      SpecialFunction:
        Type: AWS::Serverless::Function
        Properties:
          CodeUri: functions/special/
          Handler: app.lambda_handler
          Events:
            Special:
              Type: HttpApi
              Properties: {Method: GET, Path: /items/special}
      BrokenFunction:
        Type: AWS::Serverless::Function
        Properties:
          CodeUri: functions/broken/
          Handler: app.lambda_handler
          Events:
            Broken:
              Type: HttpApi
              Properties: {Method: GET, Path: /broken}
    """

ECHO_HANDLER = """\
    import base64
    import json
    import os

    SERVICE_AT_IMPORT = os.environ.get("POWERTOOLS_SERVICE_NAME")
    INVOCATIONS = []


    def lambda_handler(event, context):
        INVOCATIONS.append(event)
        mode = (event.get("queryStringParameters") or {}).get("mode")
        if mode == "raise":
            raise RuntimeError("boom")
        if mode == "plain":
            return ["not", "a", "proxy", "response"]
        if mode == "binary":
            body = base64.b64encode(bytes(range(256))).decode()
            return {"statusCode": 200, "headers": {"Content-Type": "application/octet-stream"},
                    "body": body, "isBase64Encoded": True}
        if mode == "cookies":
            return {"statusCode": 204, "cookies": ["a=1; Path=/", "b=2"]}
        if mode == "unserialisable":
            return {"statusCode": 200, "body": object()}
        if mode == "body-not-string":
            return {"statusCode": 200, "body": {"a": 1}}
        seen = {
            "event": event,
            "context": {
                "function_name": context.function_name,
                "memory_limit_in_mb": context.memory_limit_in_mb,
                "invoked_function_arn": context.invoked_function_arn,
                "aws_request_id": context.aws_request_id,
                "log_group_name": context.log_group_name,
                "remaining_ms": context.get_remaining_time_in_millis(),
            },
            "env": {"TABLE_NAME": os.environ.get("TABLE_NAME"), "SERVICE_AT_IMPORT": SERVICE_AT_IMPORT},
        }
        return {"statusCode": 201 if event["requestContext"]["http"]["method"] == "POST" else 200,
                "headers": {"Content-Type": "application/json", "X-Route": event["routeKey"]},
                "body": json.dumps(seen)}
    """

SPECIAL_HANDLER = """\
    def lambda_handler(event, context):
        return {"handler": "special", "route": event["routeKey"]}
    """

BROKEN_HANDLER = """\
    raise ImportError("this function cannot start")
    """


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


@pytest.fixture(scope="module")
def key_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home") / tokens.KEY_FILE_NAME


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, key_path: Path) -> Iterator[Gateway]:
    repo = tmp_path_factory.mktemp("repo")
    _write(repo / "template.yaml", TEMPLATE)
    _write(repo / "functions/echo/app.py", ECHO_HANDLER)
    _write(repo / "functions/special/app.py", SPECIAL_HANDLER)
    _write(repo / "functions/broken/app.py", BROKEN_HANDLER)
    template = load_template(repo / "template.yaml")
    functions = ("EchoFunction", "SpecialFunction", "BrokenFunction")
    environments = {name: function_environment(template, name, REFS) for name in functions}
    authorizer = JwtAuthorizer(tokens.load_signing_key(key_path), ISSUER, AUDIENCE)
    config = GatewayConfig(
        template_path=repo / "template.yaml",
        authorizer=authorizer,
        port=0,
        refs=REFS,
        environments=environments,
    )
    mp = pytest.MonkeyPatch()
    # What the stack does: the union of the functions' environments, set once.
    mp.setenv("TABLE_NAME", REFS["Table"])
    mp.setenv("POWERTOOLS_SERVICE_NAME", "global-service")
    with Gateway(config) as running:
        yield running
    mp.undo()


@pytest.fixture
def client(gateway: Gateway) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway.url, timeout=10) as http:
        yield http


@pytest.fixture
def token(key_path: Path) -> str:
    return tokens.issue_token(
        "alice", name="Alice", email="alice@example.com", phone="+15550100", key_path=key_path
    )


@pytest.fixture
def invocations(gateway: Gateway) -> list[dict[str, Any]]:
    handler = gateway.functions["EchoFunction"].handler
    assert handler is not None
    calls = sys.modules[handler.__module__].INVOCATIONS
    calls.clear()
    return calls


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _seen(resp: httpx.Response) -> dict[str, Any]:
    assert resp.status_code in (HTTPStatus.OK, HTTPStatus.CREATED), resp.text
    return resp.json()


# ------------------------------------------------------------------------------------------ routing


def test_path_parameters_are_matched_and_decoded(client: httpx.Client, token: str) -> None:
    seen = _seen(client.get("/items/kb%201/members/bob%40example.com", headers=_auth(token)))

    event = seen["event"]
    assert event["routeKey"] == "GET /items/{item_id}/members/{user_id}"
    assert event["pathParameters"] == {"item_id": "kb 1", "user_id": "bob@example.com"}
    assert event["rawPath"] == "/items/kb%201/members/bob%40example.com"


def test_literal_segment_beats_parameter_and_non_dict_result_becomes_json(
    client: httpx.Client, token: str
) -> None:
    resp = client.get("/items/special", headers=_auth(token))

    assert resp.status_code == HTTPStatus.OK
    assert resp.headers["content-type"] == "application/json"
    assert resp.json() == {"handler": "special", "route": "GET /items/special"}


def test_method_is_part_of_the_route(client: httpx.Client, token: str) -> None:
    resp = client.post("/items", headers=_auth(token), json={"name": "x"})

    assert resp.status_code == HTTPStatus.CREATED
    assert resp.headers["x-route"] == "POST /items"


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/nowhere"), ("DELETE", "/items"), ("GET", "/items/"), ("GET", "/items/a/b"), ("GET", "/")],
)
def test_unknown_route_is_404_before_authorization(
    client: httpx.Client, invocations: list[dict[str, Any]], method: str, path: str
) -> None:
    resp = client.request(method, path)

    assert resp.status_code == HTTPStatus.NOT_FOUND
    assert resp.json() == {"message": "Not Found"}
    assert resp.headers["apigw-requestid"]
    assert invocations == []


def test_query_string_is_raw_and_parsed_with_duplicates_joined(client: httpx.Client, token: str) -> None:
    seen = _seen(client.get("/items?folder_id=f%201&tag=a&tag=b&empty=", headers=_auth(token)))

    event = seen["event"]
    assert event["rawQueryString"] == "folder_id=f%201&tag=a&tag=b&empty="
    assert event["queryStringParameters"] == {"folder_id": "f 1", "tag": "a,b", "empty": ""}


def test_request_without_query_or_params_omits_them(client: httpx.Client, token: str) -> None:
    event = _seen(client.get("/items", headers=_auth(token)))["event"]

    assert event["rawQueryString"] == ""
    assert "queryStringParameters" not in event
    assert "pathParameters" not in event
    assert "body" not in event
    assert event["isBase64Encoded"] is False


# -------------------------------------------------------------------------------------- authorizer


def test_claims_reach_the_handler_as_strings(client: httpx.Client, token: str) -> None:
    event = _seen(client.get("/items", headers=_auth(token)))["event"]

    authorizer = event["requestContext"]["authorizer"]
    claims = authorizer["jwt"]["claims"]
    assert authorizer["jwt"]["scopes"] is None
    assert claims["sub"] == "alice"
    assert claims["iss"] == ISSUER
    assert claims["aud"] == AUDIENCE
    assert claims["email_verified"] == "true"
    assert claims["phone_number_verified"] == "true"
    assert claims["phone_number"] == "+15550100"
    assert claims["exp"].isdigit()
    assert all(isinstance(value, str) for value in claims.values())


def test_bare_token_is_accepted_like_api_gateway(client: httpx.Client, token: str) -> None:
    resp = client.get("/items", headers={"Authorization": token})

    assert resp.status_code == HTTPStatus.OK


@pytest.fixture(scope="module")
def forged_tokens(key_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str | None]:
    now = int(time.time())
    unsigned_claims = {"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 60}
    unsigned = (
        base64.urlsafe_b64encode(json.dumps({"alg": "none", "typ": "JWT"}).encode()).rstrip(b"=").decode()
        + "."
        + base64.urlsafe_b64encode(json.dumps(unsigned_claims).encode()).rstrip(b"=").decode()
        + "."
    )
    return {
        "missing": None,
        "empty bearer": "Bearer",
        "garbage": "Bearer not.a.jwt",
        "other key": "Bearer "
        + tokens.issue_token("alice", key_path=tmp_path_factory.mktemp("other") / "other.pem"),
        "expired": "Bearer " + tokens.issue_token("alice", key_path=key_path, ttl_seconds=-5),
        "wrong audience": "Bearer " + tokens.issue_token("alice", key_path=key_path, audience="other-api"),
        "wrong issuer": "Bearer "
        + tokens.issue_token("alice", key_path=key_path, issuer="https://evil.example"),
        "alg none": "Bearer " + unsigned,
    }


@pytest.mark.parametrize(
    "case",
    [
        "missing",
        "empty bearer",
        "garbage",
        "other key",
        "expired",
        "wrong audience",
        "wrong issuer",
        "alg none",
    ],
)
def test_bad_token_is_401_and_the_handler_is_not_invoked(
    client: httpx.Client, invocations: list[dict[str, Any]], forged_tokens: dict[str, str | None], case: str
) -> None:
    authorization = forged_tokens[case]
    headers = {"Authorization": authorization} if authorization is not None else {}

    resp = client.post("/items", headers=headers, json={"name": "x"})

    assert resp.status_code == HTTPStatus.UNAUTHORIZED
    assert resp.json() == {"message": "Unauthorized"}
    assert resp.headers["www-authenticate"].startswith("Bearer")
    assert invocations == []


def test_route_with_authorizer_none_needs_no_token(client: httpx.Client) -> None:
    event = _seen(client.get("/health"))["event"]

    assert "authorizer" not in event["requestContext"]


# ---------------------------------------------------------------------------------------- the event


def test_event_has_the_payload_2_0_shape(client: httpx.Client, token: str, gateway: Gateway) -> None:
    resp = client.post(
        "/items",
        headers={
            **_auth(token),
            "User-Agent": "memmy-test/1",
            "X-Dup": "one",
            "Cookie": "session=abc; theme=dark",
        },
        json={"name": "x"},
    )
    event = _seen(resp)["event"]

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

    event = _seen(client.get("/items", headers=headers))["event"]

    assert event["headers"]["x-dup"] == "one,two"


def test_binary_body_is_base64_encoded(client: httpx.Client, token: str) -> None:
    payload = bytes(range(256))
    headers = {**_auth(token), "Content-Type": "application/octet-stream"}

    event = _seen(client.post("/items", headers=headers, content=payload))["event"]

    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == payload


def test_text_body_is_passed_as_is(client: httpx.Client, token: str) -> None:
    headers = {**_auth(token), "Content-Type": "text/plain; charset=utf-8"}

    event = _seen(client.post("/items", headers=headers, content="知识库".encode()))["event"]

    assert event["isBase64Encoded"] is False
    assert event["body"] == "知识库"


def test_context_and_environment_come_from_the_template(client: httpx.Client, token: str) -> None:
    seen = _seen(client.get("/items", headers=_auth(token)))

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
    resp = client.get("/items?mode=binary", headers=_auth(token))

    assert resp.status_code == HTTPStatus.OK
    assert resp.headers["content-type"] == "application/octet-stream"
    assert resp.content == bytes(range(256))


def test_cookies_become_set_cookie_headers(client: httpx.Client, token: str) -> None:
    resp = client.get("/items?mode=cookies", headers=_auth(token))

    assert resp.status_code == HTTPStatus.NO_CONTENT
    assert resp.headers.get_list("set-cookie") == ["a=1; Path=/", "b=2"]


def test_non_proxy_result_is_json_with_200(client: httpx.Client, token: str) -> None:
    resp = client.get("/items?mode=plain", headers=_auth(token))

    assert resp.status_code == HTTPStatus.OK
    assert resp.json() == ["not", "a", "proxy", "response"]


@pytest.mark.parametrize("mode", ["raise", "unserialisable", "body-not-string"])
def test_handler_failure_is_500_without_details(
    client: httpx.Client, token: str, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    resp = client.get(f"/items?mode={mode}", headers=_auth(token))

    assert resp.status_code == HTTPStatus.INTERNAL_SERVER_ERROR
    assert resp.json() == {"message": "Internal Server Error"}
    assert any(record.exc_info for record in caplog.records if record.name == "memmy_local.gateway")


def test_function_that_cannot_load_answers_500(client: httpx.Client, token: str, gateway: Gateway) -> None:
    resp = client.get("/broken", headers=_auth(token))

    assert resp.status_code == HTTPStatus.INTERNAL_SERVER_ERROR
    assert resp.json() == {"message": "Internal Server Error"}
    assert "this function cannot start" in (gateway.functions["BrokenFunction"].load_error or "")


def test_one_log_line_per_request_without_token_or_query(
    client: httpx.Client, token: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="memmy_local.gateway")

    client.get("/items/kb1?secret-query=x", headers=_auth(token))

    lines = [r.getMessage() for r in caplog.records if r.name == "memmy_local.gateway"]
    assert len(lines) == 1
    assert lines[0].startswith("GET /items/kb1 200 ")
    assert token not in lines[0]
    assert "secret-query" not in lines[0]


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
    resp = client.request(method, "/items", headers=_auth(token))
    assert resp.status_code == HTTPStatus.NOT_FOUND
    assert resp.headers["content-type"].startswith("application/json")

"""The local gateway over real HTTP: template routes, the JWT authorizer's refusals, payload 2.0 events."""

from __future__ import annotations

import base64
import importlib
import json
import socket
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from memmy_local import tokens
from memmy_local.gateway.authorizer import JwtAuthorizer
from memmy_local.gateway.http_events import EventContext, GatewayRequest, build_event
from memmy_local.gateway.server import Gateway, GatewayConfig
from memmy_local.template import function_environment, load_template
from tests.support.polling import wait_until

ISSUER = tokens.DEFAULT_ISSUER  # what issue_token puts unless told otherwise
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
      PoolFunction:
        Type: AWS::Serverless::Function
        Properties:
          FunctionName: !Sub ${AWS::StackName}-pool
          CodeUri: functions/pool/
          Handler: app.lambda_handler
          Events:
            Pool:
              Type: HttpApi
              Properties: {Method: GET, Path: "/pool/{tag}"}
      OtherPoolFunction:
        Type: AWS::Serverless::Function
        Properties:
          FunctionName: !Sub ${AWS::StackName}-other-pool
          CodeUri: functions/other_pool/
          Handler: app.lambda_handler
          Events:
            Other:
              Type: HttpApi
              Properties: {Method: GET, Path: "/other/{tag}"}
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

# Shared by the pool functions, as the core layer is by ours: Powertools routers, a Logger and Metrics
# created once per process, whose request state Powertools keeps in process-wide places.
POOL_SHARED = """\
    import logging
    import threading
    import time

    from aws_lambda_powertools import Logger, Metrics
    from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
    from aws_lambda_powertools.metrics import MetricUnit


    class Lines(logging.Handler):
        def __init__(self):
            super().__init__()
            self.lines = []

        def emit(self, record):
            self.lines.append(self.format(record))


    LOG = Lines()
    logger = Logger(service="pool-test", logger_handler=LOG)
    metrics = Metrics(namespace="PoolTest", service="pool-test")
    # A second instance: Powertools shares one buffer between all of them.
    other_metrics = Metrics(namespace="PoolTest", service="pool-test")
    router = APIGatewayHttpRouter()
    other_router = APIGatewayHttpRouter()
    # Tests set these: where invocations meet (``mode=meet``) or wait to be let go (``mode=hold``).
    BARRIER = threading.Barrier(2)
    RELEASE = threading.Event()
    ACTIVE = {"now": 0, "max": 0}
    LOCK = threading.Lock()


    def _seen(route, tag):
        mode = route.current_event.get_query_string_value("mode", "")
        entered = time.monotonic()
        with LOCK:
            ACTIVE["now"] += 1
            ACTIVE["max"] = max(ACTIVE["max"], ACTIVE["now"])
        try:
            if mode == "meet":
                BARRIER.wait(timeout=10)
            elif mode == "hold":
                RELEASE.wait(timeout=10)
            # Whatever the others wrote meanwhile, this request must still see its own.
            metrics.add_metric(name=f"seen_{tag}", unit=MetricUnit.Count, value=1)
            other_metrics.add_metric(name=f"also_{tag}", unit=MetricUnit.Count, value=1)
            logger.info("working", extra={"tag": tag})
            event = route.current_event
            return {
                "tag": tag,
                "path_tag": event.path_parameters["tag"],
                "caller": event.raw_event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"],
                "request_id": event.request_context.request_id,
                "correlation_id": logger.get_correlation_id(),
                "aws_request_id": route.lambda_context.aws_request_id,
                "function_name": route.lambda_context.function_name,
                "entered": entered,
                "left": time.monotonic(),
            }
        finally:
            with LOCK:
                ACTIVE["now"] -= 1


    @router.get("/pool/<tag>")
    def pool(tag):
        return _seen(router, tag)


    @other_router.get("/other/<tag>")
    def other(tag):
        return _seen(other_router, tag)
    """

POOL_HANDLER = """\
    from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
    from aws_lambda_powertools.logging import correlation_paths

    from {shared} import logger, metrics, {router}

    app = APIGatewayHttpResolver()
    app.include_router({router})


    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
    @metrics.log_metrics
    def lambda_handler(event, context):
        return app.resolve(event, context)
    """
POOL_SHARED_MODULE = "memmy_gateway_test_pool_shared"


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
    _write(repo / "shared" / f"{POOL_SHARED_MODULE}.py", POOL_SHARED)
    for directory, router in (("pool", "router"), ("other_pool", "other_router")):
        _write(
            repo / f"functions/{directory}/app.py",
            POOL_HANDLER.format(shared=POOL_SHARED_MODULE, router=router),
        )
    template = load_template(repo / "template.yaml")
    functions = ("EchoFunction", "SpecialFunction", "BrokenFunction", "PoolFunction", "OtherPoolFunction")
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
    # The pool functions' shared module stands for the core layer, importable by every function.
    mp.syspath_prepend(str(repo / "shared"))
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


# ------------------------------------------------------------------------------------- concurrency


@pytest.fixture
def pool(gateway: Gateway) -> Iterator[Any]:
    """The pool functions' shared module, with its log lines and counters reset."""
    shared = importlib.import_module(POOL_SHARED_MODULE)
    shared.LOG.lines.clear()
    shared.ACTIVE.update(now=0, max=0)
    shared.RELEASE.clear()
    yield shared
    shared.RELEASE.set()  # never leave a request held


def _get(gateway: Gateway, path: str, token: str) -> httpx.Response:
    with httpx.Client(base_url=gateway.url, timeout=30) as http:
        return http.get(path, headers=_auth(token))


def _get_all(gateway: Gateway, requests: list[tuple[str, str]]) -> list[httpx.Response]:
    """GET every (path, token) at once, each on its own connection; the responses in the same order."""
    with ThreadPoolExecutor(max_workers=len(requests)) as executor:
        return list(executor.map(lambda request: _get(gateway, *request), requests))


def _log_lines(pool: Any, message: str) -> list[dict[str, Any]]:
    return [line for line in map(json.loads, pool.LOG.lines) if line["message"] == message]


def test_concurrent_requests_to_one_function_run_at_once(gateway: Gateway, pool: Any, token: str) -> None:
    pool.BARRIER = threading.Barrier(2)

    responses = _get_all(gateway, [("/pool/a?mode=meet", token), ("/pool/b?mode=meet", token)])

    first, second = (_seen(resp) for resp in responses)
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
        seen = _seen(resp)
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
    assert sorted(_seen(resp)["tag"] for resp in responses) == sorted(f"h{i}" for i in range(cap + 2))


def test_concurrent_requests_to_two_functions_keep_their_own_events(
    gateway: Gateway, pool: Any, key_path: Path
) -> None:
    # Both functions' routers live in one shared module, as ours do in the core layer.
    pool.BARRIER = threading.Barrier(2)
    alice = tokens.issue_token("alice", key_path=key_path)
    bob = tokens.issue_token("bob", key_path=key_path)

    responses = _get_all(gateway, [("/pool/p?mode=meet", alice), ("/other/o?mode=meet", bob)])

    pool_seen, other_seen = (_seen(resp) for resp in responses)
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
    _seen(_get(gateway, "/pool/inside", token))
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

"""What the local gateway's tests run the gateway on (tests/integration/gateway/): a template of test
functions (an echo that returns the event it got, one with special answers, one that fails to import,
and two pool functions sharing a module as ours share the core layer), the claims' issuer and audience,
and how a test reads what the echo function saw."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import httpx

from memmy_local import tokens

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
        if mode == "redirect":
            # As the MCP authorization server sends a browser on: 302, its cookie, an HTML page's headers.
            return {"statusCode": 302, "headers": {"Location": "https://login.example/authorize?state=s1",
                                                   "Cache-Control": "no-store"},
                    "cookies": ["__Host-memmy-oauth=c1; Secure; HttpOnly; SameSite=Lax; Path=/; Max-Age=600"]}
        if mode == "page":
            return {"statusCode": 400, "headers": {"Content-Type": "text/html; charset=utf-8",
                                                   "Content-Security-Policy": "default-src 'none'"},
                    "body": "<!doctype html><p>允许 Claude？</p>"}
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


def bearer(token: str) -> dict[str, str]:
    """The ``Authorization`` header of ``token``."""
    return {"Authorization": f"Bearer {token}"}


def echoed(resp: httpx.Response) -> dict[str, Any]:
    """What the echo function saw (its answer's body), the request having succeeded."""
    assert resp.status_code in (HTTPStatus.OK, HTTPStatus.CREATED), resp.text
    seen: dict[str, Any] = resp.json()
    return seen

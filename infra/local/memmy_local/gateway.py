"""A local stand-in for API Gateway's HTTP API: the template's routes, its JWT authorizer, payload 2.0.

The gateway reads the routes from the functions' ``HttpApi`` events in ``template.yaml``, refuses a
request the JWT authorizer would refuse (401 without invoking anything), and invokes the handler
in-process with an HTTP API v2 (payload format 2.0) event and a fake Lambda context. Handler results are
turned into HTTP responses by API Gateway's rules, including its terse ``{"message": ...}`` errors.

Environment: handlers read ``os.environ`` lazily, and every function of the template uses the same
variable names, so the stack puts the union of the functions' environments into ``os.environ`` once
(``memmy_local.stack``). Each module is imported with its own function's environment overlaid, so that
module-level reads (a Powertools ``Logger()``'s service name) see that function's values.

Each function is a small pool of warm containers (``LocalFunction``, up to ``max_containers``, 4 by
default): concurrent requests run concurrently, as API Gateway and Lambda run them, each in a container of
its own that serves one request at a time; when all are busy a request waits for one. A container has its
own copy of the handler module (its resolver, its batch processor) and its own Powertools request state
(the current event, the routing context, the Logger's keys such as ``correlation_id`` and
``function_name``, the Metrics buffer), which Powertools otherwise keeps process-wide
(``isolate_powertools_state``). Timeouts are reported by the context's ``get_remaining_time_in_millis``
but not enforced.

Handler modules are loaded by file path under a unique module name per function (a further container's
copy under that name plus ``__container<n>``), so two ``app.py`` files do not collide; a handler's siblings in its CodeUri directory are not importable (keep shared code
in the core layer, as on Lambda with more than one function).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
import functools
import importlib.util
import itertools
import json
import logging
import re
import sys
import threading
import time
import traceback
import uuid
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from .handlers import load_function_module, overlaid_environment
from .template import Route, UnresolvableValueError, http_routes, load_template, resolve_intrinsics
from .tokens import TokenError, VerifyingKey, verify_token

log = logging.getLogger("memmy_local.gateway")

DEFAULT_ACCOUNT_ID = "123456789012"
DEFAULT_REGION = "us-east-1"
# API Gateway's payload limit for HTTP APIs.
_DIGITS = re.compile(r"[0-9]{1,12}")
_HEX_DIGITS = re.compile(rb"[0-9A-Fa-f]{1,12}")
MAX_BODY_BYTES = 10 * 1024 * 1024
_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/javascript"})
_SERVERLESS_FUNCTION = "AWS::Serverless::Function"
_METHOD_TOKEN = re.compile(r"[A-Z]{1,16}")

Handler = Callable[[dict[str, Any], Any], Any]


class GatewayError(Exception):
    """A request that API Gateway answers itself with ``{"message": ...}``; never reaches a handler."""

    def __init__(self, status: HTTPStatus, extra_headers: Mapping[str, str] | None = None) -> None:
        super().__init__(status.phrase)
        self.status = status
        self.extra_headers = dict(extra_headers or {})


# ------------------------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class GatewayRequest:
    """One HTTP request as received: raw path and query, headers in arrival order, body bytes."""

    method: str
    raw_path: str
    raw_query: str
    headers: list[tuple[str, str]]
    body: bytes
    source_ip: str
    protocol: str = "HTTP/1.1"

    def header(self, name: str) -> str | None:
        """All values of header ``name`` (case-insensitive), comma-joined as API Gateway does; None if absent."""
        values = [value for key, value in self.headers if key.lower() == name.lower()]
        return ",".join(values) if values else None


@dataclass(frozen=True)
class GatewayResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


# --------------------------------------------------------------------------------------------- routes


@dataclass(frozen=True)
class CompiledRoute:
    """A template route with its path split into literal and ``{param}`` / ``{param+}`` segments."""

    route: Route
    authorized: bool
    segments: tuple[str, ...]

    @property
    def route_key(self) -> str:
        return f"{self.route.method} {self.route.path}"

    def specificity(self) -> tuple[int, ...]:
        """Smaller is more specific: literal segments beat parameters, which beat greedy parameters."""
        ranks = tuple(2 if s.endswith("+}") else 1 if s.startswith("{") else 0 for s in self.segments)
        return (*ranks, 1 if self.route.method == "ANY" else 0)

    def match(self, method: str, segments: list[str]) -> dict[str, str] | None:
        """The path parameters (URL-decoded) if ``method`` and ``segments`` fit this route, else None."""
        if self.route.method not in (method, "ANY"):
            return None
        params: dict[str, str] = {}
        for index, pattern in enumerate(self.segments):
            if pattern.startswith("{") and pattern.endswith("+}"):
                rest = segments[index:]
                if not rest or not "".join(rest):
                    return None
                params[pattern[1:-2]] = unquote("/".join(rest))
                return params
            if index >= len(segments):
                return None
            if pattern.startswith("{") and pattern.endswith("}"):
                if not segments[index]:
                    return None
                params[pattern[1:-1]] = unquote(segments[index])
            elif pattern != segments[index]:
                return None
        return params if len(segments) == len(self.segments) else None


def compile_routes(template: Mapping[str, Any]) -> list[CompiledRoute]:
    """The template's HTTP routes, most specific first, each knowing whether the JWT authorizer guards it."""
    public = _public_route_keys(template)
    compiled = [
        CompiledRoute(route, (route.method, route.path) not in public, tuple(route.path[1:].split("/")))
        for route in http_routes(template)
    ]
    return sorted(compiled, key=CompiledRoute.specificity)


def _public_route_keys(template: Mapping[str, Any]) -> set[tuple[str, str]]:
    """Routes whose event says ``Auth: {Authorizer: NONE}`` (SAM's opt-out of the default authorizer)."""
    public: set[tuple[str, str]] = set()
    for resource in template["Resources"].values():
        if resource.get("Type") != _SERVERLESS_FUNCTION:
            continue
        for event in ((resource.get("Properties") or {}).get("Events") or {}).values():
            properties = event.get("Properties") or {}
            if event.get("Type") == "HttpApi" and (properties.get("Auth") or {}).get("Authorizer") == "NONE":
                public.add((str(properties.get("Method")).upper(), str(properties.get("Path"))))
    return public


def _find_route(
    routes: list[CompiledRoute], method: str, raw_path: str
) -> tuple[CompiledRoute, dict[str, str]]:
    # No trailing-slash folding: "/knowledge-bases/" is not "/knowledge-bases", as on API Gateway.
    segments = raw_path[1:].split("/")
    for route in routes:
        params = route.match(method, segments)
        if params is not None:
            return route, params
    raise GatewayError(HTTPStatus.NOT_FOUND)


# ------------------------------------------------------------------------------------------ authorizer


@dataclass(frozen=True)
class JwtAuthorizer:
    """The HTTP API JWT authorizer: identity source ``$request.header.Authorization``, one issuer, one audience."""

    key: VerifyingKey
    issuer: str
    audience: str

    def authorize(self, authorization: str | None) -> dict[str, Any]:
        """The verified claims of the token in ``authorization`` (``Bearer <jwt>`` or the bare JWT).

        Raises ``GatewayError(401)`` with API Gateway's ``www-authenticate`` explanation otherwise.
        """
        token = (authorization or "").strip()
        if token[:7].lower() == "bearer ":
            token = token[7:].strip()
        try:
            return verify_token(token, key=self.key, issuer=self.issuer, audience=self.audience)
        except TokenError as err:
            challenge = f'Bearer error="invalid_token" error_description="{err}"'
            raise GatewayError(HTTPStatus.UNAUTHORIZED, {"www-authenticate": challenge}) from err


def claims_as_strings(claims: Mapping[str, Any]) -> dict[str, str]:
    """Claims the way API Gateway hands them to the integration: every value a string.

    Booleans become ``"true"``/``"false"``, numbers their decimal text, arrays ``"[a b]"``.
    """
    return {name: _claim_string(value) for name, value in claims.items()}


def _claim_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "[" + " ".join(_claim_string(item) for item in value) + "]"
    return json.dumps(value, separators=(",", ":"))


# -------------------------------------------------------------------------------------------- events


def _is_text(content_type: str | None) -> bool:
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    return (
        media_type.startswith("text/")
        or media_type in _TEXT_TYPES
        or media_type.endswith("+json")
        or media_type.endswith("+xml")
    )


def _joined_pairs(pairs: list[tuple[str, str]]) -> dict[str, str]:
    joined: dict[str, str] = {}
    for key, value in pairs:
        joined[key] = f"{joined[key]},{value}" if key in joined else value
    return joined


@dataclass(frozen=True)
class EventContext:
    """Per-request values that do not come from the request itself."""

    route_key: str
    request_id: str
    received_at: float
    account_id: str = DEFAULT_ACCOUNT_ID
    api_id: str = "local"


def build_event(
    request: GatewayRequest,
    context: EventContext,
    path_parameters: Mapping[str, str],
    claims: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The HTTP API payload format 2.0 event API Gateway would send for ``request``."""
    cookies = [
        part.strip()
        for key, value in request.headers
        if key.lower() == "cookie"
        for part in value.split(";")
        if part.strip()
    ]
    headers = _joined_pairs(
        [(key.lower(), value) for key, value in request.headers if key.lower() != "cookie"]
    )
    headers.setdefault("x-forwarded-for", request.source_ip)
    headers.setdefault("x-forwarded-proto", "http")
    host = headers.get("host", "")
    received = datetime.fromtimestamp(context.received_at, tz=UTC)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": context.route_key,
        "rawPath": request.raw_path,
        "rawQueryString": request.raw_query,
        "headers": headers,
        "requestContext": {
            "accountId": context.account_id,
            "apiId": context.api_id,
            "domainName": host,
            "domainPrefix": host.split(".", 1)[0],
            "http": {
                "method": request.method,
                "path": request.raw_path,
                "protocol": request.protocol,
                "sourceIp": request.source_ip,
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": context.request_id,
            "routeKey": context.route_key,
            "stage": "$default",
            "time": received.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(context.received_at * 1000),
        },
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    if request.raw_query:
        event["queryStringParameters"] = _joined_pairs(parse_qsl(request.raw_query, keep_blank_values=True))
    if path_parameters:
        event["pathParameters"] = dict(path_parameters)
    if claims is not None:
        event["requestContext"]["authorizer"] = {"jwt": {"claims": claims_as_strings(claims), "scopes": None}}
    if request.body:
        if _is_text(headers.get("content-type")):
            event["body"] = request.body.decode("utf-8", errors="replace")
        else:
            event["body"] = base64.b64encode(request.body).decode("ascii")
            event["isBase64Encoded"] = True
    return event


# ------------------------------------------------------------------------------------------ responses


class MalformedResponseError(ValueError):
    """A handler result that API Gateway could not turn into an HTTP response (it answers 500)."""


def build_response(result: Any) -> GatewayResponse:
    """The HTTP response API Gateway makes of a payload 2.0 handler ``result``.

    A dict with ``statusCode`` is taken field by field; anything else is JSON-encoded with 200.
    """
    try:
        # Lambda serialises the result to JSON; a result it cannot serialise is a function error.
        result = json.loads(json.dumps(result))
    except (TypeError, ValueError) as err:
        raise MalformedResponseError(f"result is not JSON-serialisable: {err}") from err
    if not (isinstance(result, dict) and "statusCode" in result):
        body = json.dumps(result).encode()
        return GatewayResponse(HTTPStatus.OK, [("content-type", "application/json")], body)
    status = result["statusCode"]
    if not isinstance(status, int) or not 100 <= status <= 599:
        raise MalformedResponseError(f"statusCode {status!r} is not an HTTP status")
    headers = [(str(k).lower(), _header_value(v)) for k, v in (result.get("headers") or {}).items()]
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers.extend((str(name).lower(), _header_value(v)) for v in values)
    headers.extend(("set-cookie", str(cookie)) for cookie in result.get("cookies") or [])
    return GatewayResponse(status, headers, _response_body(result))


def _header_value(value: Any) -> str:
    text = _claim_string(value) if not isinstance(value, str) else value
    if "\r" in text or "\n" in text:
        raise MalformedResponseError("header value contains a line break")
    return text


def _response_body(result: Mapping[str, Any]) -> bytes:
    body = result.get("body")
    if body is None:
        return b""
    if not isinstance(body, str):
        raise MalformedResponseError(f"body must be a string, not {type(body).__name__}")
    if not result.get("isBase64Encoded"):
        return body.encode()
    try:
        return base64.b64decode(body, validate=True)
    except binascii.Error as err:
        raise MalformedResponseError("isBase64Encoded body is not base64") from err


def error_response(error: GatewayError) -> GatewayResponse:
    """API Gateway's own answer: ``{"message": "<reason phrase>"}``."""
    body = json.dumps({"message": error.status.phrase}).encode()
    headers = [("content-type", "application/json"), *error.extra_headers.items()]
    return GatewayResponse(error.status, headers, body)


# ---------------------------------------------------------------------------------------- containers

DEFAULT_MAX_CONTAINERS = 4
_MISSING: Any = object()
# The container whose invocation is running in this thread (None: code that runs outside any container).
_ACTIVE_CONTAINER: ContextVar[Container | None] = ContextVar("memmy_local_container", default=None)


class Container:
    """One warm "container" of a function: its own copy of the handler module and of Powertools' state.

    A container serves one invocation at a time. While it does, the Powertools attributes that are shared
    by the whole process here, but private to each container on Lambda (see ``isolate_powertools_state``),
    read and write this container's own values.
    """

    def __init__(self, number: int) -> None:
        self.number = number
        self.handler: Handler | None = None
        self.invocations = 0
        self.state: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
        # Copies of values Powertools shares between instances: id(value) -> (value, this container's copy).
        self.copies: dict[int, tuple[Any, Any]] = {}

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """This container's state in effect for the calling thread."""
        token = _ACTIVE_CONTAINER.set(self)
        try:
            yield
        finally:
            _ACTIVE_CONTAINER.reset(token)

    def __repr__(self) -> str:
        return f"Container(number={self.number}, invocations={self.invocations})"


class _ScopedAttribute:
    """A data descriptor: an attribute of a process-wide Powertools object, kept per container.

    Outside any container the value lives where Powertools put it (the instance's ``__dict__``; for a class
    attribute, ``process_value``), so code that runs no container sees no difference. Inside a container,
    the container's own value is used, first made by ``fresh`` from the process's value (with ``fresh``
    None, a container starts without one, as a new Lambda container would).
    """

    def __init__(
        self,
        name: str,
        fresh: Callable[[Any], Any] | None = None,
        *,
        owner: type | None = None,
        process_value: Any = _MISSING,
    ) -> None:
        self.name = name
        self.fresh = fresh
        # Set for a class attribute (``BaseRouter.current_event``): one value per container, whoever asks.
        self.owner = owner
        self.process_value = process_value

    def _process(self, target: Any) -> Any:
        return self.process_value if self.owner is not None else vars(target).get(self.name, _MISSING)

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None and self.owner is None:
            return self
        target = self.owner if self.owner is not None else obj
        container = _ACTIVE_CONTAINER.get()
        if container is None:
            value = self._process(target)
        else:
            values = container.state.setdefault(target, {})
            value = values.get(self.name, _MISSING)
            if value is _MISSING and self.fresh is not None:
                initial = self._process(target)
                if initial is not _MISSING:
                    value = values[self.name] = self.fresh(initial)
        if value is _MISSING:
            raise AttributeError(self.name)
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        target: Any = self.owner if self.owner is not None else obj
        container = _ACTIVE_CONTAINER.get()
        if container is not None:
            container.state.setdefault(target, {})[self.name] = value
        elif self.owner is not None:
            self.process_value = value
        else:
            vars(target)[self.name] = value


class _ScopedValue(_ScopedAttribute):
    """An attribute whose value Powertools shares between instances (``Metrics``' buffers are class-level
    dictionaries every instance holds): a container gets one copy per shared value, whichever instance
    reaches it, as every instance in one Lambda container shares the one value. Assignments set the
    process's value, inside a container too (Powertools only assigns these in ``__init__``)."""

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        value = vars(obj).get(self.name, _MISSING)
        container = _ACTIVE_CONTAINER.get()
        if value is _MISSING:
            raise AttributeError(self.name)
        if container is None:
            return value
        copied = container.copies.get(id(value))
        if copied is None:
            # The value is kept alongside its copy, so that its id cannot be reused meanwhile.
            copied = container.copies[id(value)] = (value, self.fresh(value) if self.fresh else value)
        return copied[1]

    def __set__(self, obj: Any, value: Any) -> None:
        vars(obj)[self.name] = value


def _scope_instance_attributes(
    cls: type, fresh: Mapping[str, Callable[[Any], Any]], kind: type[_ScopedAttribute] = _ScopedAttribute
) -> None:
    for name, make in fresh.items():
        if not isinstance(cls.__dict__.get(name), _ScopedAttribute):
            setattr(cls, name, kind(name, make))


def _scope_class_attributes(cls: type, names: tuple[str, ...]) -> None:
    """Class attributes written as ``cls.<name> = ...`` kept per container: a metaclass descriptor takes the
    class-level reads and writes, the same descriptor in the class takes its instances' reads."""
    if all(isinstance(cls.__dict__.get(name), _ScopedAttribute) for name in names):
        return
    slots: dict[str, Any] = {}
    for name in names:
        slots[name] = _ScopedAttribute(name, owner=cls, process_value=cls.__dict__.get(name, _MISSING))
        type.__setattr__(cls, name, slots[name])  # before the metaclass has descriptors of that name
    meta = type(cls)
    cls.__class__ = type(f"ContainerScoped{meta.__name__}", (meta,), slots)


_ISOLATION_LOCK = threading.Lock()
_isolated = False


def isolate_powertools_state() -> None:
    """Keep Powertools' per-invocation state per container (idempotent; no change outside containers).

    On Lambda each container is its own process, so Powertools keeps request state in places one process
    shares here: the resolvers' current event and context are attributes of the ``BaseRouter`` class, a
    resolver's routing context and a router's resolver are set per request or per import, a ``Logger``'s
    appended keys (``function_name``, ``function_request_id``, ``correlation_id``...) live in its
    formatter, shared by every logger of one service, and ``Metrics`` buffers in dictionaries shared by
    every instance. Powertools' ``thread_safe_append_keys`` would not help: ``inject_lambda_context`` and
    ``set_correlation_id`` write the shared keys. Each of these attributes is made per container instead.
    """
    global _isolated
    with _ISOLATION_LOCK:
        if _isolated:
            return
        from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver, BaseRouter, Router
        from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
        from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import (
            AmazonCloudWatchEMFProvider,
        )

        _scope_class_attributes(BaseRouter, ("current_event", "lambda_context"))
        _scope_instance_attributes(ApiGatewayResolver, {"context": dict})
        _scope_instance_attributes(Router, {"api_resolver": lambda resolver: resolver})
        _scope_instance_attributes(LambdaPowertoolsFormatter, {"log_format": dict})
        # Every Metrics instance's provider holds the same class-level buffers; dimension_sets is its own.
        _scope_instance_attributes(
            AmazonCloudWatchEMFProvider,
            {"metric_set": copy.deepcopy, "dimension_set": dict, "metadata_set": dict},
            _ScopedValue,
        )
        _scope_instance_attributes(AmazonCloudWatchEMFProvider, {"dimension_sets": copy.deepcopy})
        _isolated = True


# ----------------------------------------------------------------------------------------- functions


@dataclass
class LambdaContext:
    """The attributes and method of the Python runtime's context object that handlers use."""

    function_name: str
    memory_limit_in_mb: int
    invoked_function_arn: str
    aws_request_id: str
    log_group_name: str
    log_stream_name: str
    deadline: float
    function_version: str = "$LATEST"
    identity: Any = None
    client_context: Any = None

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the function's configured timeout."""
        return max(0, int((self.deadline - time.monotonic()) * 1000))


class FunctionNotLoadedError(RuntimeError):
    """The function's module could not be imported (on Lambda: an init error)."""


@dataclass
class LocalFunction:
    """One template function as a pool of warm Lambda containers, each serving one invocation at a time.

    As API Gateway and Lambda do, concurrent invocations run concurrently, each in its own container: the
    first is ``handler`` (its module is the function's module), the others are started on demand, up to
    ``max_containers``, each with its own copy of the handler module (``spawn``) and its own Powertools
    state (``isolate_powertools_state``). Beyond that, an invocation waits for a container to be free (on
    Lambda it would be throttled). Without ``spawn`` (a handler given as is) there is one container.
    Timeouts are reported by the context's ``get_remaining_time_in_millis`` but not enforced.
    """

    logical_id: str
    function_name: str
    code_uri: str
    handler_spec: str
    memory_mb: int
    timeout_s: float
    region: str = DEFAULT_REGION
    account_id: str = DEFAULT_ACCOUNT_ID
    handler: Handler | None = None
    load_error: str | None = None
    # Imports another copy of the handler's module, for one more container; called in that container.
    spawn: Callable[[], Handler] | None = field(default=None, repr=False)
    max_containers: int = DEFAULT_MAX_CONTAINERS
    _containers: list[Container] = field(default_factory=list, repr=False)
    _idle: list[Container] = field(default_factory=list, repr=False)
    _starting: int = field(default=0, repr=False)
    _started: int = field(default=0, repr=False)
    _canonical_taken: bool = field(default=False, repr=False)
    _available: threading.Condition = field(default_factory=threading.Condition, repr=False)

    @property
    def containers(self) -> tuple[Container, ...]:
        """The containers started so far, in order."""
        with self._available:
            return tuple(self._containers)

    def context(self, request_id: str) -> LambdaContext:
        """A fresh context for one invocation."""
        day = datetime.now(tz=UTC).strftime("%Y/%m/%d")
        return LambdaContext(
            function_name=self.function_name,
            memory_limit_in_mb=self.memory_mb,
            invoked_function_arn=f"arn:aws:lambda:{self.region}:{self.account_id}:function:{self.function_name}",
            aws_request_id=request_id,
            log_group_name=f"/aws/lambda/{self.function_name}",
            log_stream_name=f"{day}/[$LATEST]{uuid.uuid4().hex}",
            deadline=time.monotonic() + self.timeout_s,
        )

    def invoke(self, event: Any, request_id: str | None = None) -> Any:
        """Run the handler in a free container with ``event`` and a fresh context; its exceptions propagate.

        Thread-safe: concurrent calls run in different containers, one call per container at a time.
        """
        if self.handler is None:
            raise FunctionNotLoadedError(f"{self.logical_id} was not loaded: {self.load_error}")
        container = self._acquire()
        try:
            with container.active():
                assert container.handler is not None
                return container.handler(event, self.context(request_id or str(uuid.uuid4())))
        finally:
            with self._available:
                container.invocations += 1
                self._idle.append(container)
                self._available.notify()

    def _acquire(self) -> Container:
        """A free container: an idle one (the most recently used), else a new one below the cap, else wait."""
        capacity = max(1, self.max_containers) if self.spawn is not None else 1
        with self._available:
            while not self._idle:
                if len(self._containers) + self._starting < capacity:
                    self._starting += 1
                    self._started += 1
                    number = self._started
                    # The first container runs the function's own module; the others, copies of it.
                    canonical = not self._canonical_taken
                    self._canonical_taken = True
                    break
                self._available.wait()
            else:
                return self._idle.pop()
        # Started outside the lock: the other containers go on serving meanwhile.
        container: Container | None = None
        try:
            container = self._start(number, canonical)
            return container
        finally:
            with self._available:
                self._starting -= 1
                if container is not None:
                    self._containers.append(container)
                else:
                    self._canonical_taken = self._canonical_taken and not canonical
                    self._available.notify()

    def _start(self, number: int, canonical: bool) -> Container:
        isolate_powertools_state()
        container = Container(number)
        if canonical:
            container.handler = self.handler
        else:
            assert self.spawn is not None
            try:
                with container.active():
                    # The copy's module-level code runs in the new container, as a Lambda init would.
                    container.handler = self.spawn()
            except Exception as err:
                # On Lambda: the new container's init error, that invocation's failure.
                raise FunctionNotLoadedError(
                    f"{self.logical_id}: container {number} could not load: {type(err).__name__}: {err}"
                ) from err
        return container


def _function_property(template: Mapping[str, Any], logical_id: str, name: str, default: Any) -> Any:
    properties = template["Resources"][logical_id].get("Properties") or {}
    globals_ = (template.get("Globals") or {}).get("Function") or {}
    return properties.get(name, globals_.get(name, default))


def describe_function(
    template: Mapping[str, Any],
    logical_id: str,
    refs: Mapping[str, str],
    region: str = DEFAULT_REGION,
    account_id: str = DEFAULT_ACCOUNT_ID,
) -> LocalFunction:
    """A function's name, code location, memory and timeout from the template (Globals applied)."""
    try:
        name = str(
            resolve_intrinsics(_function_property(template, logical_id, "FunctionName", logical_id), refs)
        )
    except UnresolvableValueError:
        name = logical_id
    return LocalFunction(
        logical_id=logical_id,
        function_name=name,
        code_uri=str(_function_property(template, logical_id, "CodeUri", "")),
        handler_spec=str(_function_property(template, logical_id, "Handler", "")),
        memory_mb=int(_function_property(template, logical_id, "MemorySize", 128)),
        timeout_s=float(_function_property(template, logical_id, "Timeout", 3)),
        region=region,
        account_id=account_id,
    )


# Imports run one at a time: each overlays its function's environment on os.environ while it runs.
_IMPORT_LOCK = threading.Lock()
_copy_numbers = itertools.count(2)


def _handler_module(
    repo_root: Path, function: LocalFunction, environment: Mapping[str, str]
) -> tuple[ModuleType, str]:
    """The function's module (imported once per process) and the name of its handler attribute."""
    module_path, _, attribute = function.handler_spec.rpartition(".")
    if not module_path or not attribute:
        raise ValueError(
            f"{function.logical_id}: Handler {function.handler_spec!r} is not <module>.<function>"
        )
    with _IMPORT_LOCK:
        module = load_function_module(function.code_uri, function.handler_spec, repo_root, environment)
    return module, attribute


def _handler_of(module: ModuleType, attribute: str, logical_id: str) -> Handler:
    handler: Handler | None = getattr(module, attribute, None)
    if not callable(handler):
        raise AttributeError(f"{logical_id}: {module.__file__} has no callable {attribute!r}")
    return handler


def load_handler(repo_root: Path, function: LocalFunction, environment: Mapping[str, str]) -> Handler:
    """Import ``<repo_root>/<CodeUri>/<module>.py`` (once per process) and return its handler."""
    return _handler_of(*_handler_module(repo_root, function, environment), function.logical_id)


def copy_handler(
    module: ModuleType, attribute: str, environment: Mapping[str, str], logical_id: str
) -> Handler:
    """The handler of a fresh copy of ``module``, imported under a name of its own: another container's.

    The copy has its own module globals (a resolver, a batch processor); modules it imports (the core
    layer, Powertools) are shared with the other containers, hence ``isolate_powertools_state``.
    """
    path = Path(module.__file__ or "")
    with _IMPORT_LOCK:
        name = f"{module.__name__}__container{next(_copy_numbers)}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None or not path.is_file():
            raise FileNotFoundError(f"no handler module at {path}")
        copied = importlib.util.module_from_spec(spec)
        # Registered before running, as the first copy is, so that pydantic can resolve the module's names.
        sys.modules[name] = copied
        try:
            with overlaid_environment(environment):
                spec.loader.exec_module(copied)
        except BaseException:
            del sys.modules[name]
            raise
    return _handler_of(copied, attribute, logical_id)


def load_function(
    template: Mapping[str, Any],
    logical_id: str,
    *,
    repo_root: Path,
    refs: Mapping[str, str],
    environment: Mapping[str, str] | None = None,
    region: str = DEFAULT_REGION,
    account_id: str = DEFAULT_ACCOUNT_ID,
    max_containers: int = DEFAULT_MAX_CONTAINERS,
) -> LocalFunction:
    """Describe and import one template function (for the gateway and for event runners).

    An import failure does not raise: like a Lambda whose init fails, the function is returned with
    ``load_error`` set, the error is logged, and each invocation fails. Further containers import their
    own copies of the module when concurrent invocations need them (``LocalFunction``).
    """
    function = describe_function(template, logical_id, refs, region, account_id)
    function.max_containers = max_containers
    variables = dict(environment or {})
    try:
        module, attribute = _handler_module(repo_root, function, variables)
        function.handler = _handler_of(module, attribute, logical_id)
        function.spawn = functools.partial(copy_handler, module, attribute, variables, logical_id)
    except Exception as err:
        function.load_error = f"{type(err).__name__}: {err}"
        log.error("cannot load %s (%s): %s", logical_id, function.handler_spec, function.load_error)
        log.debug("%s", traceback.format_exc())
    return function


# ------------------------------------------------------------------------------------------- gateway


@dataclass
class GatewayConfig:
    """Where the gateway listens and what it needs to resolve and run the template's functions."""

    template_path: Path
    authorizer: JwtAuthorizer
    repo_root: Path | None = None
    host: str = "127.0.0.1"
    port: int = 8080
    refs: Mapping[str, str] = field(default_factory=dict)
    # Function logical id -> its resolved environment, overlaid while its module is imported.
    environments: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    region: str = DEFAULT_REGION
    account_id: str = DEFAULT_ACCOUNT_ID
    # Containers per function: how many requests to one function run at once (more wait for one).
    max_containers: int = DEFAULT_MAX_CONTAINERS


class Gateway:
    """The HTTP API on loopback: ``start()`` loads the handlers and serves in a background thread."""

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.repo_root = config.repo_root or config.template_path.parent
        self.template = load_template(config.template_path)
        self.routes = compile_routes(self.template)
        self.functions: dict[str, LocalFunction] = {}
        self._httpd = ThreadingHTTPServer((config.host, config.port), _make_request_handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.port}"

    def start(self) -> Gateway:
        """Import every routed function's handler, then serve; returns at once."""
        self._load_functions()
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1}, name="memmy-gateway", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _load_functions(self) -> None:
        for compiled in self.routes:
            logical_id = compiled.route.function
            if logical_id not in self.functions:
                self.functions[logical_id] = load_function(
                    self.template,
                    logical_id,
                    repo_root=self.repo_root,
                    refs=self.config.refs,
                    environment=self.config.environments.get(logical_id, {}),
                    region=self.config.region,
                    account_id=self.config.account_id,
                    max_containers=self.config.max_containers,
                )

    def handle(self, request: GatewayRequest) -> GatewayResponse:
        """Route, authorize, invoke: the whole request path, without the socket."""
        request_id = str(uuid.uuid4())
        received_at = time.time()
        started = time.perf_counter()
        route_key = "-"
        try:
            compiled, params = _find_route(self.routes, request.method, request.raw_path)
            route_key = compiled.route_key
            claims = (
                self.config.authorizer.authorize(request.header("authorization"))
                if compiled.authorized
                else None
            )
            if len(request.body) > MAX_BODY_BYTES:
                raise GatewayError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
            context = EventContext(route_key, request_id, received_at, account_id=self.config.account_id)
            event = build_event(request, context, params, claims)
            response = self._invoke(self.functions[compiled.route.function], event, request_id)
        except GatewayError as err:
            response = error_response(err)
        response.headers.append(("apigw-requestid", request_id))
        elapsed_ms = (time.perf_counter() - started) * 1000
        log.info(
            "%s %s %d %.1f ms (%s)", request.method, request.raw_path, response.status, elapsed_ms, route_key
        )
        return response

    def _invoke(self, function: LocalFunction, event: dict[str, Any], request_id: str) -> GatewayResponse:
        try:
            return build_response(function.invoke(event, request_id))
        except Exception:
            log.exception("%s failed (request %s)", function.logical_id, request_id)
            raise GatewayError(HTTPStatus.INTERNAL_SERVER_ERROR) from None


# -------------------------------------------------------------------------------------------- server


def _make_request_handler(gateway: Gateway) -> type[BaseHTTPRequestHandler]:
    class RequestHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes; without this, Nagle plus delayed ACK adds ~40 ms.
        disable_nagle_algorithm = True
        server_version = "MemmyLocalGateway/1"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s " + format, self.address_string(), *args)

        def _serve(self) -> None:
            try:
                body = self._read_body()
            except GatewayError as err:
                self.close_connection = True
                self._send(error_response(err))
                return
            target = urlsplit(self.path)
            request = GatewayRequest(
                method=self.command,
                raw_path=target.path or "/",
                raw_query=target.query,
                headers=list(self.headers.items()),
                body=body,
                source_ip=self.client_address[0],
                protocol=self.request_version,
            )
            self._send(gateway.handle(request))

        def _read_body(self) -> bytes:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                return self._read_chunked()
            # As API Gateway does: a length that is not one plain number (negative, not a number, two
            # different values) is refused at once, rather than read as "until the client hangs up".
            values = {value.strip() for value in self.headers.get_all("Content-Length") or []}
            if len(values) > 1 or any(not _DIGITS.fullmatch(value) for value in values):
                raise GatewayError(HTTPStatus.BAD_REQUEST)
            length = int(values.pop()) if values else 0
            if length > MAX_BODY_BYTES:
                raise GatewayError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
            return self.rfile.read(length) if length else b""

        def _read_chunked(self) -> bytes:
            chunks: list[bytes] = []
            total = 0
            while True:
                field = self.rfile.readline().split(b";", 1)[0].strip()
                if not _HEX_DIGITS.fullmatch(field):
                    raise GatewayError(HTTPStatus.BAD_REQUEST)
                size = int(field, 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                total += size
                if total > MAX_BODY_BYTES:
                    raise GatewayError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()

        def _send(self, response: GatewayResponse) -> None:
            self.send_response(response.status)
            for name, value in response.headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)

        def __getattr__(self, name: str) -> Any:
            # Every method API Gateway takes reaches the routing (TRACE, CONNECT and the rest get its 404),
            # instead of http.server's HTML 501 for the methods it has no do_<METHOD> for.
            if name.startswith("do_") and _METHOD_TOKEN.fullmatch(name[3:]):
                return self._serve
            raise AttributeError(name)

    return RequestHandler

"""The local API Gateway HTTP API: the template's routes on a loopback server, refused as the JWT authorizer
would refuse them, each invoking its function in a warm container with a payload 2.0 event, the result
answered by API Gateway's rules (docs/architecture.md, "Local stack")."""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from memmy_local.lambdas.functions import (
    DEFAULT_ACCOUNT_ID,
    DEFAULT_MAX_CONTAINERS,
    DEFAULT_REGION,
    LocalFunction,
    load_function,
)
from memmy_local.serving import LoopbackHTTPServer, serve_in_background, stop_serving
from memmy_local.template import load_template

from .authorizer import JwtAuthorizer
from .http_events import (
    EventContext,
    GatewayError,
    GatewayRequest,
    GatewayResponse,
    build_event,
    build_response,
    error_response,
)
from .routing import compile_routes, find_route

log = logging.getLogger("memmy_local.gateway")

_DIGITS = re.compile(r"[0-9]{1,12}")
_HEX_DIGITS = re.compile(rb"[0-9A-Fa-f]{1,12}")
# API Gateway's payload limit for HTTP APIs.
MAX_BODY_BYTES = 10 * 1024 * 1024
_METHOD_TOKEN = re.compile(r"[A-Z]{1,16}")


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
        self._httpd = LoopbackHTTPServer((config.host, config.port), _make_request_handler(self))
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
        self._thread = serve_in_background(self._httpd, "memmy-gateway")
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        stop_serving(self._httpd, self._thread)
        self._thread = None

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
            compiled, params = find_route(self.routes, request.method, request.raw_path)
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

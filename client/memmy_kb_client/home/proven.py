"""A connection to the desktop service that the listener proves itself on before a credential goes out,
and that is never opened again after: the control client's and the MCP server's (docs/desktop.md, "The
service proves itself"). The hook does the same on a raw socket (``raw_request``); both judge the
listener's answer by ``proof.check_answer``."""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from memmy_kb_client.home import proof
from memmy_kb_client.http_client import Reply, TransportError

HOST: Final = "127.0.0.1"

# Opens the connection to 127.0.0.1:port (tests hand in one that answers in-process).
ConnectTo = Callable[[int, float], http.client.HTTPConnection]


def _connect(port: int, timeout: float) -> http.client.HTTPConnection:
    return http.client.HTTPConnection(HOST, port, timeout=timeout)


class ProvenConnection:
    """One connection to the service on ``port``: ``open``, ``prove`` that the listener holds ``token``
    (the ``purpose`` token), then ``request`` on it with that token; a connection the listener closed
    is never reopened, so nothing goes out to whoever holds the port next."""

    def __init__(
        self, port: int, token: str, purpose: str, *, timeout: float, connect: ConnectTo | None = None
    ) -> None:
        self.port = port
        self._token = token
        self._purpose = purpose
        self._connection = (connect or _connect)(port, timeout)

    def open(self) -> None:
        """Connect; ``OSError`` when nothing answers on the port."""
        self._connection.connect()

    def prove(self, holder: str, *, start: str = proof.START) -> None:
        """The listener answers a fresh challenge with the proof under the token (``proof``), or
        ``NotProven`` naming ``holder`` (what it failed to prove it holds) and ``start``, how to start the
        service again; ``OSError`` when the challenge got no answer. Nothing secret is sent."""
        nonce = proof.new_nonce()
        reply = self._send("GET", proof.target(self._purpose, nonce), None, {"Accept": "application/json"})
        proof.check_answer(
            reply.status, reply.data, self._token, self._purpose, nonce, self.port, holder=holder, start=start
        )
        if self._connection.sock is None:  # it closed the connection: a new one could reach someone else
            raise proof.NotProven(proof.refusal(self.port, "it closed the connection after the proof", start))
        self._connection.auto_open = 0  # never reconnect behind our back after the proof

    def request(self, method: str, target: str, json_body: Any = None) -> Reply:
        """``method target`` with the token, on the proven connection; ``OSError`` when it broke."""
        headers = {"Authorization": f"Bearer {self._token}", "Accept": "application/json"}
        body = None
        if json_body is not None:
            body = json.dumps(json_body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        return self._send(method, target, body, headers)

    def _send(self, method: str, target: str, body: bytes | None, headers: Mapping[str, str]) -> Reply:
        try:
            self._connection.request(method, target, body=body, headers=dict(headers))
            response = self._connection.getresponse()
            return Reply(response.status, response.read(), response.reason)
        except http.client.HTTPException as err:  # NotConnected too: the proven connection was closed
            raise TransportError(f"{type(err).__name__}: {err}") from err

    @property
    def connection(self) -> http.client.HTTPConnection:
        """The connection itself, to hand to an ``HttpClient`` once proven (it never reopens)."""
        return self._connection

    def close(self) -> None:
        self._connection.close()

"""Each stdlib HTTP server we run sets ``TCP_NODELAY`` on the sockets it accepts, so that a kept-alive
client never waits for its own delayed ACK (~40 ms a request when Nagle's algorithm holds back the
second send of a response); ``bench.keepalive`` measures the effect, and its servers are the ones here."""

from __future__ import annotations

import socket
import socketserver

import pytest

from bench import keepalive


@pytest.fixture(autouse=True)
def no_keychain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")


def test_every_server_accepts_its_connections_without_nagle(monkeypatch, tmp_path):
    nodelay: dict[int, int] = {}  # the server's port -> TCP_NODELAY on a socket it accepted
    setup = socketserver.StreamRequestHandler.setup

    def recording_setup(handler: socketserver.StreamRequestHandler) -> None:
        setup(handler)
        port = handler.connection.getsockname()[1]
        nodelay[port] = handler.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)

    monkeypatch.setattr(socketserver.StreamRequestHandler, "setup", recording_setup)
    seen = {}
    for index, (name, server) in enumerate(keepalive.SERVERS.items()):
        home = tmp_path / str(index)
        home.mkdir()
        with server(home) as (port, request):
            keepalive.measure(port, request, requests=2)  # raises on an answer other than 200
        seen[name] = nodelay.get(port)

    assert seen == dict.fromkeys(keepalive.SERVERS, 1)

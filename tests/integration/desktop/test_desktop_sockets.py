"""The desktop service's sockets: each response leaves in one send on a socket without Nagle (a kept-alive
client waits no delayed ACK), a restart binds the port at once though the last run's connections sit in
TIME_WAIT, and a second live service on that port is still refused."""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.desktop.handler import DesktopHTTPServer
from memmy_kb_client.desktop.server import DesktopConfig, DesktopService, PortInUse
from memmy_kb_client.desktop.state import DesktopState
from memmy_kb_client.home import paths
from tests.support.polling import wait_until

UNREACHABLE_CLOUD = "http://127.0.0.1:9"
_TIME_WAIT = "06"  # the state column of /proc/net/tcp


@pytest.fixture(autouse=True)
def no_keychain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")


def start(state_dir: Path, port: int = 0) -> DesktopService:
    return DesktopService(
        DesktopConfig(state_dir=str(state_dir), cloud_url=UNREACHABLE_CLOUD, port=port)
    ).start()


def recall_request(port: int, hook_token: str, *, close: bool = False) -> bytes:
    body = json.dumps({"query": "q", "agent": "claude-code"}).encode()
    lines = [
        "POST /hook/recall HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        f"Authorization: Bearer {hook_token}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
    ] + (["Connection: close"] if close else [])
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class CountingSocket:
    """An accepted socket that records each send the handler makes on it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sends: list[bytes] = []

    def sendall(self, data: Any) -> None:
        self.sends.append(bytes(data))
        self.sock.sendall(data)

    def send(self, data: Any) -> int:
        self.sends.append(bytes(data))
        return self.sock.send(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


def test_each_response_leaves_in_one_send_on_a_socket_without_nagle(tmp_path):
    state_dir = tmp_path / "desktop"
    paths.ensure_private_dir(str(state_dir))
    state = DesktopState(DesktopConfig(state_dir=str(state_dir), cloud_url=UNREACHABLE_CLOUD, port=0))
    server = DesktopHTTPServer(state, 0)
    state.port = server.port
    state.load()
    try:
        with socket.create_server(("127.0.0.1", 0)) as listener:
            client = socket.create_connection(listener.getsockname()[:2], timeout=10)
            accepted, address = listener.accept()
            with client, accepted:
                # Three requests on one kept-alive connection, then the client is done sending.
                client.sendall(recall_request(server.port, state.hook_token) * 3)
                client.shutdown(socket.SHUT_WR)
                counted = CountingSocket(accepted)
                server.finish_request(counted, address)  # type: ignore[arg-type]
                nodelay = accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
                accepted.shutdown(socket.SHUT_WR)
                received = b""
                while chunk := client.recv(65536):
                    received += chunk
    finally:
        server.server_close()
        state.cloud.close()
    assert received.count(b"HTTP/1.1 200 ") == 3
    # Headers and body together, once per response: nothing is held back for the client's delayed ACK.
    assert len(counted.sends) == 3, [send[:40] for send in counted.sends]
    assert all(send.startswith(b"HTTP/1.1 200 ") and send.endswith(b"}") for send in counted.sends)
    assert nodelay != 0


def _time_wait_on(port: int) -> bool:
    """Whether a TCP socket of 127.0.0.1:``port`` sits in TIME_WAIT (Linux's /proc/net/tcp)."""
    local = f"0100007F:{port:04X}"
    with open("/proc/net/tcp", encoding="ascii") as table:
        return any(
            fields[1] == local and fields[3] == _TIME_WAIT
            for fields in (line.split() for line in table.readlines()[1:])
        )


def test_the_service_restarts_on_its_port_at_once_after_closing_connections(tmp_path):
    running = start(tmp_path / "desktop")
    port = running.port
    hook_token = running.state.hook_token
    try:
        for _ in range(3):
            # Connection: close, so the service closes first and its side of each connection stays in
            # TIME_WAIT for about a minute.
            with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
                client.sendall(recall_request(port, hook_token, close=True))
                while client.recv(65536):
                    pass
        if Path("/proc/net/tcp").exists():
            wait_until(lambda: _time_wait_on(port), timeout=5, message=f"a TIME_WAIT socket on port {port}")
    finally:
        running.stop()
    with start(tmp_path / "desktop", port) as again:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request(
            "POST",
            "/hook/recall",
            body=json.dumps({"query": "q"}).encode(),
            headers={"Authorization": f"Bearer {again.state.hook_token}"},
        )
        response = connection.getresponse()
        assert (response.status, json.loads(response.read())["cloud"]) == (200, "logged_out")
        connection.close()


def test_a_second_live_service_on_the_same_port_is_refused(tmp_path):
    with start(tmp_path / "first") as first:
        with pytest.raises(PortInUse, match=f"cannot listen on 127.0.0.1:{first.port}"):
            start(tmp_path / "second", first.port)
        # The first one still answers, and the refused one left no record behind.
        connection = http.client.HTTPConnection("127.0.0.1", first.port, timeout=10)
        connection.request("GET", "/control/status", headers={"Authorization": "Bearer wrong"})
        assert connection.getresponse().status == 401
        connection.close()
        assert paths.read_service(str(tmp_path / "second")) is None


def test_a_burst_of_connections_waits_in_the_backlog_instead_of_being_refused(tmp_path):
    # Forty hooks, searches and page requests arriving before the accept loop has taken any: each one's
    # handshake completes in the kernel's queue (socketserver's default backlog of 5 left the rest
    # unanswered until they timed out or were reset).
    state_dir = tmp_path / "desktop"
    paths.ensure_private_dir(str(state_dir))
    state = DesktopState(DesktopConfig(state_dir=str(state_dir), cloud_url=UNREACHABLE_CLOUD, port=0))
    server = DesktopHTTPServer(state, 0)  # listening, but nothing accepts yet
    opened: list[socket.socket] = []
    try:
        for _ in range(40):
            opened.append(socket.create_connection(("127.0.0.1", server.port), timeout=1))
    finally:
        for sock in opened:
            sock.close()
        server.server_close()
    assert len(opened) == 40

"""The hook's request to the desktop service: raw HTTP/1.1 on one new socket, sent once the listener has
proven on that same connection that it holds the token (``proof``). ``http.client`` would bring ``ssl``
and ``email`` into every turn's start (docs/desktop.md, "Measured"); the callers that can afford it (the
control client, the MCP server) use ``proven``'s connection. Both judge the proof by
``proof.check_answer``."""

from __future__ import annotations

import socket
import time

from memmy_kb_client.home import proof

HOST = "127.0.0.1"
MAX_REPLY_BYTES = 1024 * 1024


def read_reply(sock: socket.socket, deadline: float) -> tuple[int, bytes]:
    """One HTTP/1.1 reply framed by its ``Content-Length`` (the service always sends one); ``ValueError``
    (or ``IndexError``) for anything else."""
    raw = b""
    length = -1
    while True:
        header_block, separator, payload = raw.partition(b"\r\n\r\n")
        if separator and length < 0:
            lines = header_block.split(b"\r\n")
            status = int(lines[0].split()[1])
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if length < 0:
                raise ValueError("no Content-Length")
        if length >= 0 and len(payload) >= length:
            if len(payload) > length:
                raise ValueError("more than one reply")
            return status, payload
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        chunk = sock.recv(65536)
        if not chunk:
            raise ValueError("truncated reply")
        raw += chunk
        if len(raw) > MAX_REPLY_BYTES:
            raise ValueError("reply too large")


def post_proven(
    port: int, token: str, purpose: str, path: str, body: bytes, deadline: float
) -> tuple[int, bytes]:
    """``POST path`` with ``token`` (the ``purpose`` token) and the JSON ``body`` to 127.0.0.1:``port``,
    once the listener has proven it holds the token, on the same connection; the status and the body.
    Raises on any failure (``TimeoutError`` past ``deadline``, ``OSError``), and ``proof.NotProven`` when
    the proof fails: the token and the body were not sent."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError
    nonce = proof.new_nonce()
    challenge = (
        f"GET {proof.target(purpose, nonce)} HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
        "Accept: application/json\r\n\r\n"
    ).encode("ascii")
    head = (
        f"POST {path} HTTP/1.1\r\n"
        f"Host: {HOST}:{port}\r\n"
        f"Authorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\n"
        "Accept: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("ascii")
    with socket.create_connection((HOST, port), timeout=remaining) as sock:
        sock.sendall(challenge)
        try:
            status, payload = read_reply(sock, deadline)
        except (ValueError, IndexError) as err:
            raise proof.NotProven(
                proof.refusal(port, "its answer to the challenge was no HTTP reply")
            ) from err
        proof.check_answer(status, payload, token, purpose, nonce, port, holder=f"{purpose} token")
        sock.sendall(head + body)
        return read_reply(sock, deadline)

"""How the desktop service proves it is itself before a caller sends it a credential.

A caller that is about to send a token (the control token, a pasted cloud token, the hook token and a
prompt) first asks ``GET /proof?for=control|hook&nonce=NONCE`` on the same connection, with a fresh
random nonce and no credential. The service answers ``{"proof": HMAC-SHA256(token, LABEL, for, nonce,
port)}`` under the token of that name and the port it listens on. Only a program that holds the token
can answer, and binding the port defeats a listener that relays the challenge to the real service on
another port. The caller compares in constant time and, on any mismatch, sends nothing more.

The hook imports this module before every agent turn: ``hmac`` and ``os`` only (``hmac`` loads
``hashlib`` and OpenSSL's ``_hashlib``, about 3 ms; see docs/desktop.md, "Measured").
"""

from __future__ import annotations

import hmac
import os

PATH = "/proof"
LABEL = b"memmy-kb desktop service proof v1"
PURPOSES = ("control", "hook")
NONCE_BYTES = 32
_HEX = frozenset("0123456789abcdef")


def new_nonce() -> str:
    """A fresh random challenge: 64 lowercase hex characters."""
    return os.urandom(NONCE_BYTES).hex()


def valid_nonce(nonce: str) -> bool:
    """A challenge as ``new_nonce`` makes them (32 to 128 lowercase hex characters)."""
    return 32 <= len(nonce) <= 128 and all(ch in _HEX for ch in nonce)


def target(purpose: str, nonce: str) -> str:
    """The request target that asks for the proof."""
    return f"{PATH}?for={purpose}&nonce={nonce}"


def answer(token: str, purpose: str, nonce: str, port: int) -> str:
    """The proof under ``token`` (the ``purpose`` token) for ``nonce`` on ``port``, as hex."""
    message = b"\x00".join((LABEL, purpose.encode("ascii"), nonce.encode("ascii"), str(port).encode("ascii")))
    return hmac.digest(token.encode("utf-8"), message, "sha256").hex()


def verified(token: str, purpose: str, nonce: str, port: int, offered: object) -> bool:
    """Is ``offered`` the proof for ``nonce`` on ``port`` under ``token``? Compared in constant time."""
    if not isinstance(offered, str):
        return False
    expected = answer(token, purpose, nonce, port).encode("ascii")
    return hmac.compare_digest(expected, offered.encode("utf-8", "replace"))


def refusal(port: int, what: str, start: str = "start it with `memmy-kb desktop serve`") -> str:
    """The one-line refusal when the listener on ``port`` did not prove itself; ``start``: how to start
    the service again (``advice.how_to_start``)."""
    return (
        f"the program listening on 127.0.0.1:{port} is not this desktop service; nothing was sent "
        f"({what}). If the service stopped, {start}; if it is "
        "running, another program holds its port: stop that program and restart the service."
    )

"""How the desktop service proves it holds a token before a caller sends it one: an HMAC under the token
over a fresh nonce and the port, and the answer to a challenge judged, whichever connection carried it
(docs/desktop.md, "The service proves itself"). The hook imports it before every turn."""

from __future__ import annotations

import hmac
import json
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


# How to start the service again where no better advice is known (``advice.how_to_start``); no
# typing import: the hook loads this module before every turn.
START = "start it with `memmy-kb desktop serve`"


def refusal(port: int, what: str, start: str = START) -> str:
    """The one-line refusal when the listener on ``port`` did not prove itself; ``start``: how to start
    the service again (``advice.how_to_start``)."""
    return (
        f"the program listening on 127.0.0.1:{port} is not this desktop service; nothing was sent "
        f"({what}). If the service stopped, {start}; if it is "
        "running, another program holds its port: stop that program and restart the service."
    )


class NotProven(Exception):
    """The listener did not prove it holds the token, or closed the connection after the proof: nothing
    secret was sent. The message is the one-line refusal (``refusal``)."""


def check_answer(
    status: int, payload: bytes, token: str, purpose: str, nonce: str, port: int, *, holder: str, start: str = START
) -> None:
    """The reply to the challenge for ``nonce`` (``status``, ``payload``) must carry the proof under
    ``token`` for ``port``; else ``NotProven`` naming ``holder`` (what the listener failed to prove it
    holds) and ``start``, how to start the service again."""
    try:
        offered = json.loads(payload).get("proof") if status == 200 else None
    except (ValueError, AttributeError):
        offered = None
    if not verified(token, purpose, nonce, port, offered):
        raise NotProven(refusal(port, f"it did not prove it holds the {holder}", start))

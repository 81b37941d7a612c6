"""MCP access tokens for the endpoint's tests, signed as the dev identity provider signs them (its key and
``kid``, ``memmy_local.tokens``) with the contract's claims, and ``JwksServer``: that key's JWKS served on
127.0.0.1, counting its fetches, able to fail on demand."""

from __future__ import annotations

import json
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
from jwt.algorithms import RSAAlgorithm

from memmy_local.tokens import key_id, load_signing_key

ISSUER = "http://127.0.0.1:8070"
RESOURCE = "http://127.0.0.1:8080/mcp"
CLIENT_ID = "https://claude.example/oauth/client.json"


KEY_FILE = "mcp-test-signing-key.pem"


def signing_key(directory: Path) -> Any:
    """A dev signing key of its own in ``directory`` (never the developer's dev home), ``KEY_FILE``."""
    return load_signing_key(directory / KEY_FILE)


def jwks_of(*keys: Any) -> dict[str, Any]:
    entries = []
    for key in keys:
        entry = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
        entries.append({**entry, "kid": key_id(key), "use": "sig", "alg": "RS256"})
    return {"keys": entries}


def mcp_claims(sub: str = "alice", **changed: Any) -> dict[str, Any]:
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": ISSUER,
        "sub": sub,
        "aud": RESOURCE,
        "scope": "kb.search",
        "client_id": CLIENT_ID,
        "client_name": "Claude",
        "auth_time": now - 600,
        "iat": now,
        "exp": now + 3600,
        "jti": f"jti-{now}-{sub}",
    }
    claims.update(changed)
    return {k: v for k, v in claims.items() if v is not None}


def mcp_token(key: Any, sub: str = "alice", *, kid: str | None = None, **changed: Any) -> str:
    """A token for ``sub`` with the contract's claims (``changed`` overrides; None drops one)."""
    return jwt.encode(mcp_claims(sub, **changed), key, algorithm="RS256", headers={"kid": kid or key_id(key)})


class JwksServer:
    """A JWKS on 127.0.0.1: ``keys`` served at ``url``; ``failing`` makes it answer 503."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.failing = False
        self.fetches = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.fetches += 1
                status, body = (503, b"{}") if owner.failing else (200, json.dumps(owner.document).encode())
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/jwks.json"

    @contextmanager
    def serving(self) -> Iterator[JwksServer]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()


@contextmanager
def serving_mcp_tokens() -> Iterator[tuple[dict[str, str], Callable[[str], str]]]:
    """The ``mcp`` function's settings on a JWKS served on 127.0.0.1, and a user's MCP token signed by its
    key (for a benchmark that runs the function in-process: ``bench/route_calls.py``)."""
    with tempfile.TemporaryDirectory() as folder:
        key = signing_key(Path(folder))
        with JwksServer(jwks_of(key)).serving() as server:
            settings = {"MCP_TOKEN_ISSUER": ISSUER, "MCP_JWKS_URL": server.url, "MCP_RESOURCE_URL": RESOURCE}
            yield settings, lambda user: mcp_token(key, user)

"""The desktop service's calls to the cloud with the held login, on the client's one HTTP client
(``memmy_kb_client.http_client``): a recall for the hooks, the MCP server's routes, and whatever route
the knowledge-base page asks for (``forward``). docs/desktop.md, "The local service"."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Final

from memmy_kb_client.http_client import BAD_REPLY, OK, UNAUTHORIZED, CallResult, HttpClient

MAX_REPLY_BYTES: Final = 1024 * 1024
# What a request of the page or of a command (``forward``) waits for the cloud, as the SDK does when it
# calls the cloud itself: a cold function or a large listing must not be cut off at the hooks' timeout.
FORWARD_TIMEOUT_SECONDS: Final = 30.0


class Cloud:
    """The cloud at ``base_url``, over kept-alive connections: a TLS handshake per agent turn would cost
    more than everything else the service does."""

    def __init__(
        self, base_url: str, *, timeout: float = 3.5, forward_timeout: float = FORWARD_TIMEOUT_SECONDS
    ) -> None:
        self.http = HttpClient(base_url, timeout=timeout, max_reply_bytes=MAX_REPLY_BYTES)
        self.forwarding = HttpClient(
            base_url, timeout=max(timeout, forward_timeout), max_reply_bytes=MAX_REPLY_BYTES
        )
        self.base_url = self.http.base_url

    def call(self, token: str, method: str, target: str, body: Any = None) -> CallResult:
        """One JSON call with the login ``token``. Recall and the reads have no side effect, so a request
        on a kept-alive connection the cloud had closed is sent once more."""
        return self.http.call(
            method, target, json_body=body, headers={"Authorization": f"Bearer {token}"}, retry=True
        )

    def recall(self, token: str, body: dict[str, Any]) -> CallResult:
        """``POST /recall``; ``ok`` only with a context block (a string) in the answer."""
        result = self.call(token, "POST", "/recall", body)
        if result.outcome == UNAUTHORIZED:
            return replace(result, detail="the cloud refused the login")
        if result.outcome == OK and not (
            isinstance(result.answer, dict) and isinstance(result.answer.get("context"), str)
        ):
            return replace(result, outcome=BAD_REPLY, answer=None, detail="no context in the reply")
        return result

    def forward(
        self, token: str, method: str, target: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes]:
        """One request of the page or a command sent on to the cloud as ``method target`` (path and query, already checked);
        its status and body as they are. Unreachable: ``(502, ...)``. Sent once more on a fresh connection
        only when repeating it is harmless (no POST without an ``Idempotency-Key``)."""
        sent = {"Authorization": f"Bearer {token}", "Accept": "application/json", **headers}
        if body is not None:
            sent["Content-Type"] = "application/json"
        try:
            reply = self.forwarding.send(method, target, body=body, headers=sent)
        except OSError as err:
            message = f"the cloud did not answer ({type(err).__name__})"
            return 502, json.dumps({"error": {"code": "cloud_unreachable", "message": message}}).encode(
                "utf-8"
            )
        return reply.status, reply.data

    def close(self) -> None:
        self.http.close()
        self.forwarding.close()

"""The desktop service's calls to the cloud with the held login, on the client's one HTTP client
(``memmy_kb_client.http_client``): a recall for the hooks, the MCP server's routes, and whatever route
the knowledge-base page asks for (``forward``). docs/desktop.md, "The local service"."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from memmy_kb_client.http_client import BAD_REPLY, OK, UNAUTHORIZED, CallResult, HttpClient

if TYPE_CHECKING:
    from memmy_kb_client.recall_contract import RecallRequest

MAX_REPLY_BYTES: Final = 1024 * 1024
# A recall the cloud refused for the caller's per-user limit (429 ``recall_rate_limited``): no excerpts
# this time, and no fault of anyone's setup (docs/limits.md, "Recall per user").
RATE_LIMITED: Final = "rate_limited"
# What a request of the page or of a command (``forward``) waits for the cloud, as the SDK does when it
# calls the cloud itself: a cold function or a large listing must not be cut off at the hooks' timeout.
FORWARD_TIMEOUT_SECONDS: Final = 30.0


@dataclass(frozen=True)
class RecallAnswer:
    """``POST /hook/recall``'s answer; ``cloud_seconds`` None when the cloud was not asked, ``retry_after``
    the seconds the cloud asked to wait (``rate_limited`` only)."""

    context: str
    outcome: str
    excerpts: int = 0
    cloud_seconds: float | None = None
    retry_after: int | None = None


def rate_limited(result: CallResult) -> CallResult:
    """``result`` as the outcome ``rate_limited`` when the cloud refused a recall for the caller's limit."""
    if result.status == 429 and result.error is not None and result.error.code == "recall_rate_limited":
        return replace(result, outcome=RATE_LIMITED, detail=f"recall_rate_limited, retry after {retry_after(result)} s")
    return result


def retry_after(result: CallResult) -> int:
    """The seconds a refusal asks to wait (its ``details.retry_after_seconds``), 1 when it does not say."""
    details = result.error.details if result.error is not None else None
    seconds = details.get("retry_after_seconds") if isinstance(details, dict) else None
    return seconds if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds > 0 else 1


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

    def recall(self, token: str, body: RecallRequest) -> CallResult:
        """``POST /recall``; ``ok`` only with a context block (a string) in the answer (a
        ``replies.RecallResponse``), ``rate_limited`` past the caller's recall limit."""
        result = rate_limited(self.call(token, "POST", "/recall", body))
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

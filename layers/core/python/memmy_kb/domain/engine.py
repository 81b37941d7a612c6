"""The knowledge engine's vocabulary: the files and search hits the domain reads, and how a call fails.

The engine is MemOS (``memmy_kb.domain.ports.engines.KnowledgeEngine``); these are not its wire shapes, only
what the rules use of them. The adapter parses and normalises MemOS's replies and turns its failures
into the error family below, chosen by MemOS's code, never by text. ``request_sent`` tells "MemOS
certainly did nothing" from "the outcome is unknown", which decides whether a create or an add may be
repeated; the domain translates the family into refusals (``memmy_kb.errors``).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Final

_MESSAGE_LIMIT: Final = 300

# The backend of a KB recorded before there were several (and of a secret holding a single key).
DEFAULT_BACKEND: Final = "default"


def backend_of(recorded: str | None) -> str:
    """The MemOS backend a record names; records written before backends existed name the default one."""
    return recorded or DEFAULT_BACKEND


@dataclass(frozen=True)
class EngineBackend:
    """One MemOS project the service may use (``memmy_kb.domain.ports.engines.KnowledgeEngines``).

    ``max_kbs`` is the most KBs placement puts there (its plan's cap, or less); a ``draining`` backend
    takes no new KBs but keeps serving those it holds; ``max_qps`` is the rate MemOS recommends for the
    project, which recall's rate governor keeps to (``memmy_kb.domain.recall.rate_governor``; None: its default).
    """

    id: str
    max_kbs: int
    max_qps: float | None = None
    draining: bool = False


class FileStatus(StrEnum):
    """A file's processing status in the engine."""

    PROCESSING = "processing"
    AVAILABLE = "available"
    FAILED = "failed"


@dataclass(frozen=True)
class FileInput:
    """One file to add: ``content`` is a public http(s) URL, a ``data:<mime>;base64,`` URL or bare base64."""

    content: str = field(repr=False)
    name: str | None = None

    def __post_init__(self) -> None:
        if not self.content:
            raise ValueError("a file to add needs content")

    @classmethod
    def from_bytes(cls, data: bytes, *, name: str, mime_type: str) -> FileInput:
        """A file sent inline as a base64 data URL."""
        encoded = base64.b64encode(data).decode("ascii")
        return cls(content=f"data:{mime_type};base64,{encoded}", name=name)


@dataclass(frozen=True)
class EngineFile:
    """A file as the engine reports it: its engine id, the name it was added with, its status, and when it
    was added (None when the engine did not say)."""

    id: str
    name: str | None = None
    status: FileStatus = FileStatus.PROCESSING
    created_at: datetime | None = None


@dataclass(frozen=True)
class SearchHit:
    """One search hit. ``title`` is the source shown to the agent; a hit names no knowledge base.
    ``memos_file_ids``: the MemOS file ids the hit says it comes from, when it says any (docs/memos.md,
    "A hit's file"); recall names the hit's file from them first."""

    title: str = ""
    content: str = field(default="", repr=False)
    score: float | None = None
    memos_file_ids: tuple[str, ...] = ()


class MemosApiKeyError(RuntimeError):
    """The configured secret holds no usable MemOS API key (the message never includes the value)."""


class MemosBackendUnknown(MemosApiKeyError):
    """A record names a MemOS backend the secret no longer lists (retired too early: put it back)."""


class MemosError(Exception):
    """A MemOS call failed. ``code`` is the envelope code (None when there was none).

    ``request_sent`` is False only when the request certainly never reached MemOS (connection refused or
    not established in time); for every other failure MemOS may have acted on it.
    """

    def __init__(
        self,
        message: str,
        *,
        endpoint: str,
        code: int | None = None,
        http_status: int | None = None,
        request_sent: bool = True,
        retry_after: float | None = None,
    ) -> None:
        self.message = message[:_MESSAGE_LIMIT]
        self.endpoint = endpoint
        self.code = code
        self.http_status = http_status
        self.request_sent = request_sent
        self.retry_after = retry_after
        # An earlier attempt of the same call may have acted (its reply never came): set by the client.
        self.after_unknown_attempt = False
        super().__init__(f"MemOS {endpoint} failed (code={code}, http_status={http_status}): {self.message}")

    @property
    def did_nothing(self) -> bool:
        """Whether MemOS certainly did not act on the request: it never left, or MemOS answered with an
        error code of its own (it refused or failed the call). A timeout or a reply that could not be read
        after sending leaves the outcome unknown, also when a retry of it then failed outright."""
        if self.after_unknown_attempt:
            return False
        return not self.request_sent or not (isinstance(self, MemosUnavailable) and self.code is None)


class MemosNotFound(MemosError):
    """The knowledge base or file does not exist (or is not linked to our project)."""


class MemosQuotaExceeded(MemosError):
    """The account's call or knowledge-base quota is used up."""


class MemosRateLimited(MemosError):
    """MemOS (or a service behind it) asked us to slow down."""


class MemosUnavailable(MemosError):
    """MemOS failed, timed out, could not be reached, or answered something unreadable."""


class MemosRejectedInput(MemosError):
    """MemOS refused the request's content (bad parameter, file type, size, count...)."""


class MemosUnsupportedFile(MemosRejectedInput):
    """MemOS does not take this type of file."""


class MemosFileTooLarge(MemosRejectedInput):
    """The file (or the request's files together) is larger than MemOS takes."""


class MemosAuthError(MemosError):
    """The API key is missing, invalid or expired."""

"""Typed HTTP client for the MemOS knowledge-base API (contract: ``memos-api.md``).

Every MemOS call is a JSON ``POST`` answered with the envelope ``{"code", "data", "message"}``; ``code`` 0
or 200 is success and errors often arrive with HTTP 200. This module turns the envelope, HTTP statuses and
transport failures into a small exception hierarchy (mapped by code, never by message text) and the
response variants MemOS is known to produce into a few pydantic models.

This module sits on the recall path: keep its imports light (no boto3, no Powertools utilities).
"""

from __future__ import annotations

import base64
import random
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final, Literal

import httpx
from aws_lambda_powertools import Logger
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "FileInput",
    "FilePage",
    "FileStatus",
    "MemosAuthError",
    "MemosClient",
    "MemosError",
    "MemosFile",
    "MemosMemory",
    "MemosNotFound",
    "MemosQuotaExceeded",
    "MemosRateLimited",
    "MemosRejectedInput",
    "MemosUnavailable",
    "normalise_file_status",
    "parse_timestamp",
]

# A child logger shares the handler (and correlation id) of the function's Logger without configuring it.
logger = Logger(child=True)

DEFAULT_TIMEOUT: Final = httpx.Timeout(connect=2.0, read=10.0, write=10.0, pool=2.0)
MAX_SEARCH_LIMIT: Final = 25
_SUCCESS_CODES: Final = frozenset({0, 200})
_MESSAGE_LIMIT: Final = 300
# Above this an epoch value is taken as milliseconds (1e11 ms is 1973; 1e11 s is the year 5138).
_EPOCH_MS_THRESHOLD: Final = 100_000_000_000


# -- errors ----------------------------------------------------------------------------------------


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
        super().__init__(f"MemOS {endpoint} failed (code={code}, http_status={http_status}): {self.message}")


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


class MemosAuthError(MemosError):
    """The API key is missing, invalid or expired."""


_CODE_FAMILIES: Final[dict[int, type[MemosError]]] = {
    **dict.fromkeys((40001, 50120, 50123), MemosNotFound),
    **dict.fromkeys((40300, 40304), MemosQuotaExceeded),
    40309: MemosRateLimited,
    **dict.fromkeys((50000, 50002, 50004, 50005), MemosUnavailable),
    **dict.fromkeys(
        (40000, 40002, 40003, 40007, 40008, 40009, 40012, 50103, 50104, 50105, 50107), MemosRejectedInput
    ),
    **dict.fromkeys((40100, 40130, 40103, 40132), MemosAuthError),
}


def _family_for_http_status(status: int) -> type[MemosError]:
    if status in (401, 403):
        return MemosAuthError
    if status == 429:
        return MemosRateLimited
    if status in (400, 413, 422):
        return MemosRejectedInput
    if status == 408 or status >= 500:
        return MemosUnavailable
    # 404 and the like without a MemOS code mean a wrong URL, not a missing KB: never "done".
    return MemosError


def _family_for_code(code: int) -> type[MemosError]:
    if code in _CODE_FAMILIES:
        return _CODE_FAMILIES[code]
    if 40000 <= code <= 49999:
        return MemosRejectedInput
    if 50000 <= code <= 59999:
        return MemosUnavailable
    if 100 <= code <= 599:  # a code that mirrors an HTTP status
        return _family_for_http_status(code)
    return MemosError


# -- models ----------------------------------------------------------------------------------------


class FileStatus(StrEnum):
    """A MemOS file's processing status, normalised from the several spellings MemOS has used."""

    PROCESSING = "processing"
    AVAILABLE = "available"
    FAILED = "failed"


_STATUS_SPELLINGS: Final[dict[str, FileStatus]] = {
    **dict.fromkeys(
        ("running", "processing", "pending", "queued", "waiting", "in_progress", "parsing"),
        FileStatus.PROCESSING,
    ),
    **dict.fromkeys(
        ("completed", "complete", "success", "succeeded", "done", "finished", "available"),
        FileStatus.AVAILABLE,
    ),
    **dict.fromkeys(("failed", "fail", "processing_failed", "error", "errored"), FileStatus.FAILED),
}


def normalise_file_status(raw: object) -> FileStatus:
    """Map any MemOS status spelling to a ``FileStatus``; unknown values count as processing (logged)."""
    key = str(raw).strip().lower().replace("-", "_").replace(" ", "_") if raw is not None else ""
    status = _STATUS_SPELLINGS.get(key)
    if status is None:
        logger.warning(
            "Unknown MemOS file status, treating it as processing", extra={"memos_status": str(raw)}
        )
        return FileStatus.PROCESSING
    return status


def parse_timestamp(value: object) -> datetime | None:
    """An aware UTC datetime from epoch milliseconds (or seconds), or an ISO 8601 string; else None.

    Naive ISO strings are taken as UTC. Unreadable values give None rather than failing the whole reply.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text)
        except ValueError:
            try:
                parsed = datetime.fromisoformat(text)
            except ValueError:
                return None
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    if isinstance(value, int | float):
        seconds = value / 1000 if abs(value) >= _EPOCH_MS_THRESHOLD else value
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def _lenient_float(value: object) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _lenient_int(value: object) -> int | None:
    number = _lenient_float(value)
    return int(number) if number is not None and number.is_integer() else None


class _MemosModel(BaseModel):
    model_config = ConfigDict(
        extra="ignore", frozen=True, validate_by_name=True, validate_by_alias=True, coerce_numbers_to_str=True
    )


class FileInput(_MemosModel):
    """One file to add: ``content`` is a public http(s) URL, a ``data:<mime>;base64,`` URL or bare base64."""

    content: str = Field(repr=False, min_length=1)
    name: str | None = None
    type: Literal["document", "skill"] = "document"

    @classmethod
    def from_bytes(cls, data: bytes, *, name: str, mime_type: str) -> FileInput:
        """A file sent inline as a base64 data URL."""
        encoded = base64.b64encode(data).decode("ascii")
        return cls(content=f"data:{mime_type};base64,{encoded}", name=name)


class MemosFile(_MemosModel):
    """A file as MemOS reports it; ``status`` is normalised, ``raw_status`` keeps MemOS's spelling."""

    id: str
    name: str | None = None
    type: str | None = None
    status: FileStatus = FileStatus.PROCESSING
    raw_status: str | None = None
    size: str | int | float | None = None
    size_mb: float | None = Field(default=None, validation_alias=AliasChoices("sizeMB", "size_mb"))
    created_at: datetime | None = Field(
        default=None, validation_alias=AliasChoices("create_time", "created_at", "createTime")
    )
    updated_at: datetime | None = Field(
        default=None, validation_alias=AliasChoices("update_time", "updated_at", "updateTime")
    )

    @model_validator(mode="before")
    @classmethod
    def _normalise_status(cls, data: Any) -> Any:
        if isinstance(data, dict) and "raw_status" not in data:
            raw = data.get("status")
            data = {
                **data,
                "raw_status": None if raw is None else str(raw),
                "status": normalise_file_status(raw),
            }
        return data

    @field_validator("size_mb", mode="before")
    @classmethod
    def _size_mb(cls, value: object) -> float | None:
        return _lenient_float(value)

    @field_validator("size", mode="before")
    @classmethod
    def _size(cls, value: object) -> object:
        return value if isinstance(value, str | int | float) and not isinstance(value, bool) else None

    @field_validator("created_at", "updated_at", mode="before")
    @classmethod
    def _timestamp(cls, value: object) -> datetime | None:
        return parse_timestamp(value)


class FilePage(_MemosModel):
    """One page of a KB's files. ``total`` is None when MemOS did not say."""

    total: int | None = None
    page: int
    page_size: int
    files: list[MemosFile]

    @property
    def has_more(self) -> bool:
        """Whether a later page may hold more files."""
        if not self.files:
            return False
        if self.total is not None:
            return self.page * self.page_size < self.total
        return len(self.files) >= self.page_size


class MemosMemory(_MemosModel):
    """One search hit. For KB excerpts ``title`` is the source shown to the agent; there is no KB id."""

    id: str | None = None
    title: str = Field(default="", validation_alias=AliasChoices("memory_key", "title"))
    content: str = Field(default="", repr=False, validation_alias=AliasChoices("memory_value", "content"))
    score: float | None = Field(default=None, validation_alias=AliasChoices("relativity", "score"))
    memory_type: str | None = None
    tags: list[str] = Field(default_factory=list)
    conversation_id: str | None = None
    status: str | None = None
    confidence: float | None = None
    created_at: datetime | None = Field(
        default=None, validation_alias=AliasChoices("create_time", "created_at", "createTime")
    )
    updated_at: datetime | None = Field(
        default=None, validation_alias=AliasChoices("update_time", "updated_at", "updateTime")
    )

    @field_validator("title", "content", mode="before")
    @classmethod
    def _text(cls, value: object) -> str:
        return "" if value is None else str(value)

    @field_validator("score", "confidence", mode="before")
    @classmethod
    def _number(cls, value: object) -> float | None:
        return _lenient_float(value)

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: object) -> list[str]:
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if isinstance(value, list | tuple):
            return [str(tag) for tag in value if tag is not None]
        return []

    @field_validator("id", "memory_type", "conversation_id", "status", mode="before")
    @classmethod
    def _optional_text(cls, value: object) -> str | None:
        return None if value is None or isinstance(value, dict | list) else str(value)

    @field_validator("created_at", "updated_at", mode="before")
    @classmethod
    def _timestamp(cls, value: object) -> datetime | None:
        return parse_timestamp(value)


# -- client ----------------------------------------------------------------------------------------

# Nothing was sent when these happen, so even non-idempotent calls may be repeated.
_NOT_SENT_ERRORS: Final = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


class MemosClient:
    """The MemOS knowledge-base API, one typed method per endpoint.

    Authentication: ``api_key_provider(False)`` gives the key for each call (it is expected to cache). When
    MemOS answers with an auth error the client calls ``api_key_provider(True)`` once and repeats that call
    once; a second auth error is raised as ``MemosAuthError``. This holds for create and add too: MemOS
    acted on nothing it refused for auth. Exceptions raised by the provider itself propagate unchanged.

    Retry policy (exponential backoff with full jitter: a delay drawn uniformly from
    ``[0, min(backoff_cap, backoff_base * 2 ** (attempt - 1))]``, at most ``max_attempts`` attempts):

    * ``get_files``, ``list_files``, ``iter_files``, ``search``, ``delete_files`` and
      ``delete_knowledge_base`` are safe to repeat; they are retried on ``MemosUnavailable`` (5xxxx codes,
      HTTP 5xx, timeouts, connection errors, unreadable replies) and ``MemosRateLimited``.
    * ``create_knowledge_base`` and ``add_files`` are *not* retried once the request may have reached MemOS:
      a repeat could create a second KB (which nothing could ever find again: MemOS cannot list KBs) or a
      duplicate file. They are retried only when the connection was never established
      (``httpx.ConnectError``, ``ConnectTimeout``, ``PoolTimeout``), since then nothing was sent. Their
      callers must treat a ``MemosUnavailable`` with ``request_sent`` True as "outcome unknown".
    * Quota, rejected-input, not-found and auth errors are never retried (apart from the one auth refresh).

    A ``Retry-After`` header (seconds) lengthens the delay, still within ``backoff_cap``. Timeouts apply per
    request, also to an injected ``http`` client.
    """

    def __init__(
        self,
        base_url: str,
        api_key_provider: Callable[[bool], str],
        *,
        http: httpx.Client | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        max_attempts: int = 3,
        backoff_base: float = 0.2,
        backoff_cap: float = 2.0,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if backoff_base < 0 or backoff_cap < 0:
            raise ValueError("backoff_base and backoff_cap must not be negative")
        self._base_url = base_url.rstrip("/")
        self._api_key_provider = api_key_provider
        self._owns_http = http is None
        self._http = http if http is not None else httpx.Client(timeout=timeout)
        self._timeout = timeout
        self._max_attempts = max_attempts
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        self._sleep = sleep
        # Jitter only spreads retries; it needs no cryptographic randomness.
        self._rng = rng if rng is not None else random.Random()  # noqa: S311

    def __repr__(self) -> str:
        return f"MemosClient(base_url={self._base_url!r})"

    def close(self) -> None:
        """Close the HTTP client if this object created it."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> MemosClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- endpoints ---------------------------------------------------------------------------------

    def create_knowledge_base(self, name: str, description: str | None = None) -> str:
        """Create a KB linked to our project and return its MemOS id. Not retried once sent (see class)."""
        body: dict[str, Any] = {"knowledgebase_name": name}
        if description is not None:
            body["knowledgebase_description"] = description
        data = self._call("/create/knowledgebase", body, idempotent=False)
        kb_id: object = data
        if isinstance(data, dict):
            kb_id = data.get("id") or data.get("knowledgebase_id")
        if isinstance(kb_id, int) and not isinstance(kb_id, bool):
            kb_id = str(kb_id)
        if not isinstance(kb_id, str) or not kb_id:
            raise MemosUnavailable("reply carries no knowledge base id", endpoint="/create/knowledgebase")
        return kb_id

    def add_files(self, kb_id: str, files: list[FileInput]) -> list[MemosFile]:
        """Submit files (MemOS takes up to 20 per request) and return them, usually still processing.

        Not retried once sent (see class): a repeat could store the files twice.
        """
        if not files:
            raise ValueError("add_files needs at least one file")
        endpoint = "/add/knowledgebase-file"
        data = self._call(
            endpoint,
            {"knowledgebase_id": kb_id, "file": [f.model_dump(exclude_none=True) for f in files]},
            idempotent=False,
        )
        added = _parse_files(data, endpoint)
        if not added:
            # The files may well be stored: say so rather than let the caller believe nothing happened.
            raise MemosUnavailable("reply lists none of the added files", endpoint=endpoint)
        return added

    def get_files(self, file_ids: list[str]) -> list[MemosFile]:
        """The files with these ids (MemOS may leave out ids it does not know)."""
        if not file_ids:
            return []
        endpoint = "/get/knowledgebase-file"
        return _parse_files(self._call(endpoint, {"file_ids": list(file_ids)}, idempotent=True), endpoint)

    def list_files(self, kb_id: str, *, page: int = 1, page_size: int = 20) -> FilePage:
        """One page of a KB's files (pages count from 1)."""
        if page < 1 or page_size < 1:
            raise ValueError("page and page_size must be at least 1")
        endpoint = "/get/knowledgebase-file"
        data = self._call(
            endpoint, {"knowledgebase_id": kb_id, "page": page, "page_size": page_size}, idempotent=True
        )
        files = _parse_files(data, endpoint)
        fields = data if isinstance(data, dict) else {}
        return FilePage(
            total=_lenient_int(fields.get("total")),
            page=_lenient_int(fields.get("page")) or page,
            page_size=_lenient_int(fields.get("page_size")) or page_size,
            files=files,
        )

    def iter_files(self, kb_id: str, *, page_size: int = 20, max_pages: int = 10_000) -> Iterator[MemosFile]:
        """Every file of a KB, page by page; stops when a page brings nothing new (a server ignoring
        ``page`` cannot make it loop) or after ``max_pages`` pages."""
        seen: set[str] = set()
        for page_number in range(1, max_pages + 1):
            page = self.list_files(kb_id, page=page_number, page_size=page_size)
            fresh = [f for f in page.files if f.id not in seen]
            if not fresh:
                return
            seen.update(f.id for f in fresh)
            yield from fresh
            if not page.has_more:
                return

    def delete_files(self, file_ids: list[str]) -> None:
        """Delete files; ids MemOS does not know count as deleted."""
        if not file_ids:
            return
        try:
            self._call("/delete/knowledgebase-file", {"file_ids": list(file_ids)}, idempotent=True)
        except MemosNotFound:
            return

    def delete_knowledge_base(self, kb_id: str, *, delete_all: bool) -> None:
        """Unlink the KB from our project (``delete_all`` False) or delete it with its files (True).

        A KB MemOS does not know, or no longer links to us, counts as deleted.
        """
        try:
            self._call(
                "/delete/knowledgebase",
                {"knowledgebase_id": kb_id, "delete_all": delete_all},
                idempotent=True,
            )
        except MemosNotFound:
            return

    def search(
        self,
        user_id: str,
        query: str,
        kb_ids: list[str],
        *,
        limit: int = 9,
        relativity: float | None = None,
    ) -> list[MemosMemory]:
        """Search exactly ``kb_ids`` and return the hits of ``memory_detail_list``.

        Refuses (``ValueError``) an empty list or an ``"all"`` entry: MemOS reads ``[]`` and ``["all"]`` as
        "no KB" and "every KB of the project", and the recall scope must always be explicit. Preference,
        tool and skill memories are never asked for.
        """
        if not kb_ids:
            raise ValueError("search needs at least one knowledge base id")
        for kb_id in kb_ids:
            if not isinstance(kb_id, str) or not kb_id.strip() or kb_id.strip().lower() == "all":
                raise ValueError("search takes explicit knowledge base ids only")
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_SEARCH_LIMIT}")
        if relativity is not None and not 0 <= relativity <= 1:
            raise ValueError("relativity must be between 0 and 1")
        body: dict[str, Any] = {
            "user_id": user_id,
            "query": query,
            "knowledgebase_ids": list(kb_ids),
            "memory_limit_number": limit,
            "include_preference": False,
            "include_tool_memory": False,
            "include_skill": False,
        }
        if relativity is not None:
            body["relativity"] = relativity
        endpoint = "/search/memory"
        data = self._call(endpoint, body, idempotent=True)
        if data is None:
            return []
        if not isinstance(data, dict):
            raise MemosUnavailable("search reply is not an object", endpoint=endpoint)
        items = data.get("memory_detail_list") or []
        if not isinstance(items, list):
            raise MemosUnavailable("memory_detail_list is not a list", endpoint=endpoint)
        memories = []
        for item in items:
            try:
                memories.append(MemosMemory.model_validate(item))
            except ValidationError:
                logger.warning("Skipping an unreadable MemOS search item", extra={"endpoint": endpoint})
        return memories

    # -- transport ---------------------------------------------------------------------------------

    def _call(self, endpoint: str, body: dict[str, Any], *, idempotent: bool) -> Any:
        """POST ``body`` to ``endpoint`` with auth refresh and retries; return the envelope's ``data``."""
        api_key = self._api_key_provider(False)
        refreshed = False
        attempt = 1
        while True:
            try:
                return self._send(endpoint, body, api_key)
            except MemosAuthError:
                if refreshed:
                    raise
                refreshed = True
                logger.warning("MemOS rejected the API key; fetching it again", extra={"endpoint": endpoint})
                api_key = self._api_key_provider(True)
            except (MemosUnavailable, MemosRateLimited) as exc:
                if attempt >= self._max_attempts or not (idempotent or not exc.request_sent):
                    raise
                delay = self._backoff_delay(attempt, exc.retry_after)
                logger.warning(
                    "MemOS call failed; retrying",
                    extra={
                        "endpoint": endpoint,
                        "attempt": attempt,
                        "memos_code": exc.code,
                        "http_status": exc.http_status,
                        "error_type": type(exc).__name__,
                        "retry_in_s": round(delay, 3),
                    },
                )
                self._sleep(delay)
                attempt += 1

    def _backoff_delay(self, attempt: int, retry_after: float | None) -> float:
        ceiling = min(self._backoff_cap, self._backoff_base * 2 ** (attempt - 1))
        delay = self._rng.random() * ceiling
        if retry_after is not None:
            delay = max(delay, min(retry_after, self._backoff_cap))
        return delay

    def _send(self, endpoint: str, body: dict[str, Any], api_key: str) -> Any:
        headers = {"Authorization": f"Token {api_key}", "Accept": "application/json"}
        try:
            response = self._http.post(
                f"{self._base_url}{endpoint}", json=body, headers=headers, timeout=self._timeout
            )
        except _NOT_SENT_ERRORS as exc:
            raise MemosUnavailable(
                f"could not connect ({type(exc).__name__})", endpoint=endpoint, request_sent=False
            ) from exc
        except httpx.HTTPError as exc:
            raise MemosUnavailable(f"transport failure ({type(exc).__name__})", endpoint=endpoint) from exc
        return _unwrap(response, endpoint)


def _unwrap(response: httpx.Response, endpoint: str) -> Any:
    """The envelope's ``data``, or the typed error the reply stands for."""
    status = response.status_code
    try:
        payload = response.json()
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        payload = None
    envelope = payload if isinstance(payload, dict) else {}
    raw_code = envelope.get("code")
    code = None if isinstance(raw_code, bool) else _lenient_int(raw_code)
    message = envelope.get("message") or envelope.get("msg") or ""
    message = message if isinstance(message, str) else str(message)
    ok_http = 200 <= status < 300
    if ok_http and code in _SUCCESS_CODES:
        return envelope.get("data")
    if code is not None and code not in _SUCCESS_CODES:
        family = _family_for_code(code)
    elif not ok_http:
        family = _family_for_http_status(status)
    else:
        family, message = MemosUnavailable, "unreadable reply (no JSON envelope)"
    raise family(
        message or response.reason_phrase or "error",
        endpoint=endpoint,
        code=code if code not in _SUCCESS_CODES else None,
        http_status=status,
        retry_after=_retry_after(response),
    )


def _retry_after(response: httpx.Response) -> float | None:
    value = _lenient_float(response.headers.get("retry-after"))
    return value if value is not None and value >= 0 else None


def _parse_files(data: Any, endpoint: str) -> list[MemosFile]:
    """Files from ``data``: a list, an object with ``file_detail_list``, or one file object."""
    if data is None:
        return []
    items: Any = data
    if isinstance(data, dict):
        items = data.get("file_detail_list", data.get("files")) if "id" not in data else [data]
        if items is None:
            items = []
    if not isinstance(items, list):
        raise MemosUnavailable("file list is not a list", endpoint=endpoint)
    try:
        return [MemosFile.model_validate(item) for item in items]
    except ValidationError as exc:
        raise MemosUnavailable(
            f"unreadable file entry ({exc.error_count()} errors)", endpoint=endpoint
        ) from exc

"""The shapes MemOS answers with, normalised: file status spellings, timestamps, lenient numbers.

MemOS has answered the same field in several spellings and types; each model accepts every variant
docs/memos.md lists and keeps the rest of a reply readable when one field is not. The client hands the
domain only what it reads of them (``to_engine_file``, ``to_search_hit``: ``memmy_kb.domain.engine``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

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

from memmy_kb.adapters.memos.hit_files import hit_file_ids
from memmy_kb.domain.engine import EngineFile, FileInput, FileStatus, MemosUnavailable, SearchHit

logger = Logger(child=True)

# Above this an epoch value is taken as milliseconds (1e11 ms is 1973; 1e11 s is the year 5138).
_EPOCH_MS_THRESHOLD: Final = 100_000_000_000


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


def lenient_float(value: object) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def lenient_int(value: object) -> int | None:
    number = lenient_float(value)
    return int(number) if number is not None and number.is_integer() else None


def file_body(file: FileInput) -> dict[str, str]:
    """The entry of ``/add/knowledgebase-file``'s ``file`` list that adds ``file`` as a document."""
    body = {"content": file.content, "type": "document"}
    return body if file.name is None else {**body, "name": file.name}


def file_update_body(file: FileInput) -> dict[str, str]:
    """``/update/knowledgebase-file``'s ``file``: ``{name, content}`` as MemOS documents it."""
    return {"content": file.content} if file.name is None else {"name": file.name, "content": file.content}


class _MemosModel(BaseModel):
    # Built on the first MemOS call, not at import.
    model_config = ConfigDict(
        extra="ignore",
        frozen=True,
        validate_by_name=True,
        validate_by_alias=True,
        coerce_numbers_to_str=True,
        defer_build=True,
    )


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

    def to_engine_file(self) -> EngineFile:
        """What the domain reads of this file."""
        return EngineFile(id=self.id, name=self.name, status=self.status, created_at=self.created_at)

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
        return lenient_float(value)

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
    """One search hit. For KB excerpts ``title`` is the source shown to the agent; there is no KB id, and
    a file id only in the shapes ``hit_files`` reads."""

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
    # The MemOS file ids the hit names, when it names any (``hit_files``: never read from a field of this name).
    memos_file_ids: tuple[str, ...] = ()

    def to_search_hit(self) -> SearchHit:
        """What the domain reads of this hit."""
        return SearchHit(
            title=self.title, content=self.content, score=self.score, memos_file_ids=self.memos_file_ids
        )

    @model_validator(mode="before")
    @classmethod
    def _file_ids(cls, data: Any) -> Any:
        return {**data, "memos_file_ids": hit_file_ids(data)} if isinstance(data, dict) else data

    @field_validator("title", "content", mode="before")
    @classmethod
    def _text(cls, value: object) -> str:
        return "" if value is None else str(value)

    @field_validator("score", "confidence", mode="before")
    @classmethod
    def _number(cls, value: object) -> float | None:
        return lenient_float(value)

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


def parse_files(data: Any, endpoint: str) -> list[MemosFile]:
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

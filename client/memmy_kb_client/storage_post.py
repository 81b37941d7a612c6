"""An upload's bytes sent to storage with its ticket (a presigned POST): from a path (``files upload``) or
from a file already open (a folder's sync, which opened and checked it beneath the folder)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol, cast

import httpx

from memmy_kb_client.api_error import MemmyApiError
from memmy_kb_client.replies import UploadTicket


class _ProgressReader:
    """A file wrapper that reports how many bytes the multipart upload has read."""

    def __init__(self, handle: Any, total: int, progress: Callable[[int, int], None] | None) -> None:
        self._handle, self._total, self._progress, self._sent = handle, total, progress, 0

    def fileno(self) -> int:
        # Lets httpx size the multipart body up front: storage wants a Content-Length, not chunks.
        return int(self._handle.fileno())

    def read(self, size: int = -1) -> bytes:
        chunk: bytes = self._handle.read(size)
        self._sent += len(chunk)
        # The read that finds the end returns nothing: it is no progress (an empty file's is its only one).
        if self._progress is not None and (chunk or not self._total):
            self._progress(self._sent, self._total)
        return chunk


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


class OpenFile(Protocol):
    """An open file as an upload reads it: its bytes, and its descriptor (which sizes the POST)."""
    def read(self, size: int = -1, /) -> bytes: ...
    def fileno(self) -> int: ...


def post_upload_from(
    ticket: UploadTicket,
    handle: OpenFile,
    *,
    filename: str = "file",
    progress: Callable[[int, int], None] | None = None,
    size: int | None = None,
) -> None:
    """Send an open file's bytes, from where it stands, with a ticket's presigned POST: nothing is opened
    by name (a folder's sync opens each file beneath the folder and checks it first)."""
    total = os.fstat(handle.fileno()).st_size if size is None else size
    reader = _ProgressReader(handle, total, progress)
    content_type = str(ticket["fields"].get("Content-Type", "application/octet-stream"))
    files = {"file": (filename, cast(IO[bytes], reader), content_type)}
    resp = httpx.post(ticket["url"], data=ticket["fields"], files=files, timeout=httpx.Timeout(30, write=None))
    if not resp.is_success:
        raise MemmyApiError(
            resp.status_code, "storage_rejected_upload", resp.text[:300] or resp.reason_phrase
        )


def post_upload(
    ticket: UploadTicket, path: Path, progress: Callable[[int, int], None] | None = None, size: int | None = None
) -> None:
    """Send ``path``'s bytes with an upload's or a replace's ticket (its presigned POST; a
    ``ReplacementTicket`` is an ``UploadTicket`` with more fields)."""
    with path.open("rb") as handle:
        post_upload_from(ticket, handle, filename=path.name, progress=progress, size=size)

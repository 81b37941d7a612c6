"""The ports of the upload bucket and of the queue that hands an object to the ingest again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    # Only signatures name these: a function taking a port imports no model for it.
    from memmy_kb.domain.storage import ObjectInfo, PresignedPost


class UploadRequeue(Protocol):
    """Hands an upload's object to the ingest again, as S3's notification would.

    Implemented in ``memmy_kb.adapters.sqs``.
    """

    def requeue(self, object_key: str) -> None: ...


class UploadObjects(Protocol):
    """The upload bucket (implemented by ``memmy_kb.adapters.s3.UploadStorage``)."""

    def presign_post(
        self, key: str, *, size_bytes: int, content_type: str, expires_in: int
    ) -> PresignedPost: ...

    def presign_get(self, key: str, *, expires_in: int) -> str: ...

    def head(self, key: str) -> ObjectInfo | None: ...

    def read_start(self, key: str, length: int) -> tuple[ObjectInfo, bytes] | None: ...

    def read_range(self, info: ObjectInfo, start: int, length: int) -> bytes: ...

    def iter_chunks(self, info: ObjectInfo, chunk_size: int = ...) -> Iterator[bytes]: ...

    def copy(self, info: ObjectInfo, destination_key: str) -> None: ...

    def delete(self, key: str) -> None: ...

    def delete_prefix(self, prefix: str, limit: int) -> bool: ...

    def list_keys(self, *, start_after: str | None, limit: int) -> list[str]:
        """Up to ``limit`` keys of the bucket in key order, after ``start_after`` (from the start: None)."""
        ...

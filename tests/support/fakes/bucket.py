"""``UploadObjects`` in memory: the upload bucket, with ETags, reads pinned to them, and deterministic
presigned values."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from typing import Final, Literal

from memmy_kb.adapters.s3 import STREAM_CHUNK_BYTES
from memmy_kb.domain.storage import ObjectChanged, ObjectInfo, PresignedPost

FAKE_BUCKET_URL: Final = "https://uploads.fake.invalid"
ObjectsMethod = Literal[
    "head", "read_start", "read_range", "iter_chunks", "copy", "delete", "delete_prefix", "list_keys"
]


class FakeUploadObjects:
    """``UploadObjects`` as ``memmy_kb.adapters.s3.UploadStorage``: objects with S3's ETag (the quoted MD5),
    reads pinned to the ETag they were given (``ObjectChanged`` otherwise), ``delete_prefix`` in pages, and
    presigned POSTs and GETs as deterministic values (nothing is signed). ``fail(method, error)`` makes the
    next call of ``method`` raise ``error``; ``calls`` counts calls by method."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.calls: Counter[str] = Counter()
        self._failures: dict[str, list[Exception]] = {}

    # -- arranging --------------------------------------------------------------------------------------

    def put(self, key: str, data: bytes) -> ObjectInfo:
        """Store ``data`` at ``key`` (what a client's POST does); its ObjectInfo."""
        self.objects[key] = bytes(data)
        return ObjectInfo(key=key, size=len(data), etag=_etag(data))

    def fail(self, method: ObjectsMethod, error: Exception) -> None:
        self._failures.setdefault(method, []).append(error)

    # -- UploadObjects ----------------------------------------------------------------------------------

    def presign_post(self, key: str, *, size_bytes: int, content_type: str, expires_in: int) -> PresignedPost:
        return PresignedPost(
            url=f"{FAKE_BUCKET_URL}/",
            fields={
                "key": key,
                "Content-Type": content_type,
                "x-fake-content-length": str(size_bytes),
                "x-fake-expires-in": str(expires_in),
            },
        )

    def presign_get(self, key: str, *, expires_in: int) -> str:
        return f"{FAKE_BUCKET_URL}/{key}?expires_in={expires_in}"

    def head(self, key: str) -> ObjectInfo | None:
        self._enter("head")
        data = self.objects.get(key)
        return ObjectInfo(key=key, size=len(data), etag=_etag(data)) if data is not None else None

    def read_start(self, key: str, length: int) -> tuple[ObjectInfo, bytes] | None:
        self._enter("read_start")
        data = self.objects.get(key)
        if data is None:
            return None
        return ObjectInfo(key=key, size=len(data), etag=_etag(data)), data[: max(length, 1)]

    def read_range(self, info: ObjectInfo, start: int, length: int) -> bytes:
        self._enter("read_range")
        if length <= 0 or start >= info.size:
            return b""
        return self._pinned(info)[start : min(info.size, start + length)]

    def iter_chunks(self, info: ObjectInfo, chunk_size: int = STREAM_CHUNK_BYTES) -> Iterator[bytes]:
        self._enter("iter_chunks")
        data = self._pinned(info)
        for start in range(0, len(data), chunk_size):
            yield data[start : start + chunk_size]

    def copy(self, info: ObjectInfo, destination_key: str) -> None:
        self._enter("copy")
        self.objects[destination_key] = self._pinned(info)

    def delete(self, key: str) -> None:
        self._enter("delete")
        self.objects.pop(key, None)

    def delete_prefix(self, prefix: str, limit: int = 1000) -> bool:
        self._enter("delete_prefix")
        page_size = min(limit, 1000)
        keys = sorted(k for k in self.objects if k.startswith(prefix))
        for key in keys[:page_size]:
            del self.objects[key]
        return len(keys) < page_size

    def list_keys(self, *, start_after: str | None, limit: int) -> list[str]:
        self._enter("list_keys")
        keys = sorted(k for k in self.objects if start_after is None or k > start_after)
        return keys[: max(1, min(limit, 1000))]

    # -- internals --------------------------------------------------------------------------------------

    def _pinned(self, info: ObjectInfo) -> bytes:
        data = self.objects.get(info.key)
        if data is None or _etag(data) != info.etag:
            raise ObjectChanged(info.key)
        return data

    def _enter(self, method: ObjectsMethod) -> None:
        self.calls[method] += 1
        pending = self._failures.get(method)
        if pending:
            raise pending.pop(0)


def _etag(data: bytes) -> str:
    return '"' + hashlib.md5(data, usedforsecurity=False).hexdigest() + '"'

"""The S3 adapter for the upload bucket: presigned POSTs and GETs, and bounded reads of one object.

The key layout, ``ObjectInfo``, ``PresignedPost`` and ``ObjectChanged`` are the domain's
(``memmy_kb.domain.storage``); this module speaks S3 for them. Every read of an object is pinned to the
ETag its ``head`` (or ``read_start``) returned (``IfMatch``), so a client that replaces the object while
it is being verified makes the read fail (``ObjectChanged``) instead of mixing two versions. Reads are ranged or streamed: nothing here holds a whole large object in memory.
Throttling, a 5xx or a timeout, in a call or while a body streams, is raised as ``StoreUnavailable``
(``memmy_kb.adapters.aws_errors``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from botocore.exceptions import ClientError

from memmy_kb.adapters.aws_errors import TranslatedClient, translated
from memmy_kb.domain.storage import ObjectChanged, ObjectInfo, PresignedPost

STREAM_CHUNK_BYTES: Final = 1024 * 1024
_MISSING = frozenset({"404", "NoSuchKey", "NotFound"})


def _code(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Code", ""))


class UploadStorage:
    """One bucket through a low-level S3 client (SigV4, passed in)."""

    def __init__(self, bucket: str, client: Any) -> None:
        self.bucket = bucket
        self._client = TranslatedClient(client, "bucket")

    def presign_post(self, key: str, *, size_bytes: int, content_type: str, expires_in: int) -> PresignedPost:
        """A browser-style POST that can store exactly ``size_bytes`` bytes of ``content_type`` at ``key``.

        The signed policy pins the bucket and the exact key (boto3 adds both), the content length (equal
        to the declared size) and the content type, and expires after ``expires_in`` seconds. S3 refuses
        any form field the policy does not cover. Signing is local: no AWS call is made.
        """
        post = self._client.generate_presigned_post(
            Bucket=self.bucket,
            Key=key,
            Fields={"Content-Type": content_type},
            Conditions=[
                {"Content-Type": content_type},
                ["content-length-range", size_bytes, size_bytes],
            ],
            ExpiresIn=expires_in,
        )
        return PresignedPost(url=post["url"], fields={k: str(v) for k, v in post["fields"].items()})

    def presign_get(self, key: str, *, expires_in: int) -> str:
        """A GET URL for ``key`` that works without credentials until it expires."""
        url: str = self._client.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=expires_in
        )
        return url

    def head(self, key: str) -> ObjectInfo | None:
        """Size and ETag of ``key``; None when there is no such object."""
        try:
            resp = self._client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as err:
            if _code(err) in _MISSING:
                return None
            raise
        return ObjectInfo(key=key, size=int(resp["ContentLength"]), etag=resp["ETag"])

    def read_start(self, key: str, length: int) -> tuple[ObjectInfo, bytes] | None:
        """The object's size and ETag with its first ``length`` bytes, from one ranged GET (what a HEAD and a
        GET would say); None when there is no such object. For small objects, read whole in memory."""
        try:
            reply = self._client.get_object(Bucket=self.bucket, Key=key, Range=f"bytes=0-{max(length, 1) - 1}")
        except ClientError as err:
            if _code(err) in _MISSING:
                return None
            if _code(err) == "InvalidRange":  # an empty object has no byte 0
                info = self.head(key)
                return (info, b"") if info is not None else None
            raise
        data = _read_all(reply["Body"])
        # "bytes 0-99/1234": the total after the slash; without a range answer the body is the whole object.
        content_range = str(reply.get("ContentRange") or "")
        size = int(content_range.rsplit("/", 1)[1]) if "/" in content_range else len(data)
        return ObjectInfo(key=key, size=size, etag=reply["ETag"]), data

    def read_range(self, info: ObjectInfo, start: int, length: int) -> bytes:
        """Up to ``length`` bytes from offset ``start`` of the object ``info`` describes."""
        if length <= 0 or start >= info.size:
            return b""
        end = min(info.size, start + length) - 1
        return _read_all(self._get(info, Range=f"bytes={start}-{end}")["Body"])

    def iter_chunks(self, info: ObjectInfo, chunk_size: int = STREAM_CHUNK_BYTES) -> Iterator[bytes]:
        """The object's bytes in chunks of at most ``chunk_size``, streamed from one GET."""
        body = self._get(info)["Body"]
        try:
            with translated("bucket"):
                yield from body.iter_chunks(chunk_size)
        finally:
            body.close()

    def copy(self, info: ObjectInfo, destination_key: str) -> None:
        """Server-side copy of exactly the version ``info`` describes (no bytes pass through here)."""
        try:
            self._client.copy_object(
                Bucket=self.bucket,
                Key=destination_key,
                CopySource={"Bucket": self.bucket, "Key": info.key},
                CopySourceIfMatch=info.etag,
            )
        except ClientError as err:
            if _code(err) in _MISSING | {"PreconditionFailed", "412"}:
                raise ObjectChanged(info.key) from err
            raise

    def delete(self, key: str) -> None:
        """Delete ``key``; deleting a missing object is not an error (S3 answers 204 either way)."""
        self._client.delete_object(Bucket=self.bucket, Key=key)

    def delete_prefix(self, prefix: str, limit: int = 1000) -> bool:
        """Delete up to ``limit`` objects under ``prefix`` (one listing page, one multi-delete); True
        once nothing is left under it."""
        resp = self._client.list_objects_v2(Bucket=self.bucket, Prefix=prefix, MaxKeys=min(limit, 1000))
        keys = [{"Key": obj["Key"]} for obj in resp.get("Contents", [])]
        if keys:
            self._client.delete_objects(Bucket=self.bucket, Delete={"Objects": keys, "Quiet": True})
        return not resp.get("IsTruncated") and len(keys) < min(limit, 1000)

    def list_keys(self, *, start_after: str | None, limit: int) -> list[str]:
        """One listing page (at most 1000 keys) in key order, after ``start_after``."""
        after = {"StartAfter": start_after} if start_after else {}
        resp = self._client.list_objects_v2(Bucket=self.bucket, MaxKeys=max(1, min(limit, 1000)), **after)
        return [str(obj["Key"]) for obj in resp.get("Contents", [])]

    def _get(self, info: ObjectInfo, **extra: Any) -> dict[str, Any]:
        try:
            reply: dict[str, Any] = self._client.get_object(
                Bucket=self.bucket, Key=info.key, IfMatch=info.etag, **extra
            )
            return reply
        except ClientError as err:
            if _code(err) in _MISSING | {"PreconditionFailed", "412"}:
                raise ObjectChanged(info.key) from err
            raise


def _read_all(body: Any) -> bytes:
    """A GET's whole (ranged) body, its connection released."""
    try:
        with translated("bucket"):
            data: bytes = body.read()
        return data
    finally:
        body.close()

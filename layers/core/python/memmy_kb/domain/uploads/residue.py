"""Upload bytes nothing needs any more: the one rule for deleting them, and the reconciler's sweep.

An upload's bytes live in up to two objects, ``uploads/<kb>/<upload>`` (the client's POST) and
``verified/<kb>/<upload>`` (the copy MemOS fetches for a large file; ``memmy_kb.domain.storage``).
Whether they may be deleted depends only on the upload's record as it is *now*, re-read just before
(``bytes_unneeded``); every deleter outside the KB's own cleanup follows it:

* **no record**: the record is written before the POST is signed and goes only with its KB (the
  cleanup's table step) or with its TTL, days after any delivery could still run; nothing will ever read
  the bytes again. This is the object that arrived while its KB was being cleaned up;
* **rejected**, **expired**: final; no delivery reads the bytes of a decided upload;
* **pending**, **submitting**: a delivery may be verifying the bytes right now, or will on a redelivery
  or the reconciler's requeue, and MemOS may be fetching the verified copy: never deleted;
* **submitted**: the file is in MemOS, which may still be fetching the verified copy: kept while the file
  still holds this upload's version (the bucket's lifecycle rule removes both objects within days; a
  deleted KB's go with its cleanup or, once its records are gone, with the sweep below). Once a replace
  has moved the file to a later version, or the file is gone, nothing reads them: the replace's record
  deletes the replaced version's, the file's cleanup the file's, and the sweep below any left over.

The ingest applies the rule when it finds its upload gone or decided by another delivery
(``memmy_kb.domain.uploads.ingest``). The reconciler's sweep (``sweep_upload_objects``) lists the bucket from a
cursor kept in the table, a bounded page per run, and applies it to every upload object it finds: it is
what catches an object whose event came too early (before its KB's cleanup ran) or never came.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from aws_lambda_powertools import Logger

from memmy_kb.domain.storage import upload_object_key, verified_object_key

if TYPE_CHECKING:
    from memmy_kb.domain.ports.cleanups import CleanupStore
    from memmy_kb.domain.ports.contents import ContentStore
    from memmy_kb.domain.ports.uploads import UploadObjects
    from memmy_kb.records import UploadRecord

logger = Logger(child=True)

OBJECTS_CURSOR: Final = "upload-objects"
# Both object families of an upload; anything else in the bucket is not ours to judge.
_OBJECT_KEY: Final = re.compile(r"^(?:uploads|verified)/(kb_[0-9a-f]{1,64})/(up_[0-9a-f]{1,64})$")


def bytes_unneeded(upload: UploadRecord | None) -> bool:
    """Whether an upload's objects may be deleted, given its record as read just now (None: no record)."""
    return upload is None or upload.state in ("rejected", "expired")


def drop_upload_bytes(objects: UploadObjects, kb_id: str, upload_id: str) -> None:
    """Delete an upload's object and its verified copy (either may be absent)."""
    objects.delete(upload_object_key(kb_id, upload_id))
    objects.delete(verified_object_key(kb_id, upload_id))


def drop_if_unneeded(
    contents: ContentStore, objects: UploadObjects, kb_id: str, upload_id: str
) -> UploadRecord | None:
    """Read the upload again and delete its bytes if ``bytes_unneeded``; the record as read."""
    current = contents.get_upload(kb_id, upload_id)
    if bytes_unneeded(current):
        drop_upload_bytes(objects, kb_id, upload_id)
    return current


def _superseded(contents: ContentStore, upload: UploadRecord | None) -> bool:
    """A submitted upload whose file no longer holds its version: replaced since, or deleted."""
    if upload is None or upload.state != "submitted" or upload.file_id is None:
        return False
    file = contents.get_file(upload.kb_id, upload.file_id)
    return file is None or file.upload_id != upload.upload_id


@dataclass(frozen=True)
class SweepResult:
    listed: int
    deleted: int
    done: bool  # the listing reached the end of the bucket (the cursor starts over next run)


def sweep_upload_objects(
    contents: ContentStore, objects: UploadObjects, cursor_store: CleanupStore, *, limit: int
) -> SweepResult:
    """One bounded page of the bucket, from the kept cursor: each upload object whose upload no longer
    needs its bytes (``bytes_unneeded``) is deleted. The cursor moves past the page, or starts over
    (None) when the page was the last."""
    cursor = cursor_store.get_cursor(OBJECTS_CURSOR)
    keys = objects.list_keys(start_after=cursor, limit=limit)
    deleted = 0
    for key in keys:
        match = _OBJECT_KEY.match(key)
        if match is None:
            continue
        upload = contents.get_upload(match.group(1), match.group(2))
        if bytes_unneeded(upload) or _superseded(contents, upload):
            objects.delete(key)
            deleted += 1
    done = len(keys) < limit
    cursor_store.put_cursor(OBJECTS_CURSOR, None if done or not keys else keys[-1])
    if deleted:
        logger.warning("upload objects of gone or decided uploads removed", extra={"count": deleted})
    return SweepResult(listed=len(keys), deleted=deleted, done=done)

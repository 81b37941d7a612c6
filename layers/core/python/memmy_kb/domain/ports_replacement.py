"""The part of ``memmy_kb.domain.ports.ContentStore`` that writes a replace: a file's next version.

A replace is an upload naming the file it ``replaces`` (docs/uploads.md, "Replacing a file"); these are
its transitions, each one transaction in the adapter (``memmy_kb.adapters.dynamodb.replacements``, which
says what each keeps true). Its own module only to keep ``ports`` short; ``ContentStore`` extends it.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from memmy_kb.records import ActivityRecord, FileRecord, KbCapacity, UploadRecord


class ReplacementWrites(Protocol):
    """The writes of a replace, from its issue to its record or its end."""

    def put_replacement(self, upload: UploadRecord, *, take_over: str | None, capacity: KbCapacity) -> None:
        """The pending replace and its file marked ``replacing`` it (see the DynamoDB adapter)."""
        ...

    def update_replacement_submitting(
        self,
        upload: UploadRecord,
        *,
        attempt_id: str,
        now: datetime,
        keep_until: int,
        sha256: str | None,
        capacity: KbCapacity,
    ) -> None: ...

    def update_replacement_released(
        self, upload: UploadRecord, *, attempt_id: str, expires_at: int
    ) -> None: ...

    def update_replacement_rejected(
        self, upload: UploadRecord, *, reason: str, expires_at: int, attempt_id: str | None
    ) -> None: ...

    def update_replacement_expired(self, upload: UploadRecord, *, expires_at: int) -> None: ...

    def delete_pending_replacement(self, upload: UploadRecord) -> None:
        """The owner dismisses a replace whose bytes were not sent on: its record gone and its file unmarked
        (see the DynamoDB adapter)."""
        ...

    def clear_replacing(self, kb_id: str, file_id: str, upload_id: str) -> bool: ...

    def put_file_version(
        self,
        file: FileRecord,
        *,
        owner_id: str,
        attempt_id: str,
        replaced_version: int,
        shrink: int,
        expires_at: int,
        activity: ActivityRecord,
    ) -> None: ...

"""The port of a KB's contents: its folders, files and uploads, and the writes of a replace.

A replace is an upload naming the file it ``replaces`` (docs/uploads.md, "Replacing a file");
``ReplacementWrites`` are its transitions, each one transaction in the adapter
(``memmy_kb.adapters.dynamodb.replacements``, which says what each keeps true); ``ContentStore`` extends it."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    # Only signatures name these: a function taking a port imports no model for it.
    from memmy_kb.records import (
        ActivityRecord,
        FileRecord,
        FolderRecord,
        KbCapacity,
        UploadRecord,
    )


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


class ContentStore(ReplacementWrites, Protocol):
    """A KB's folders, files and uploads (a replace's writes: ``ReplacementWrites``)."""

    def query_kb_items(
        self, kb_id: str
    ) -> tuple[list[FolderRecord], list[FileRecord], list[UploadRecord]]: ...

    def query_folders(self, kb_id: str) -> list[FolderRecord]: ...

    def get_folder(self, kb_id: str, folder_id: str) -> FolderRecord | None: ...

    def get_file(self, kb_id: str, file_id: str) -> FileRecord | None: ...

    def get_upload(self, kb_id: str, upload_id: str) -> UploadRecord | None: ...

    def put_folder(self, folder: FolderRecord) -> None: ...

    def update_folder(
        self, folder: FolderRecord, previous: FolderRecord, ancestors: list[FolderRecord]
    ) -> None: ...

    def update_file_folder(self, kb_id: str, file_id: str, folder_id: str | None) -> None: ...

    def put_upload(self, upload: UploadRecord, *, capacity: KbCapacity) -> None: ...

    def update_upload_submitting(
        self,
        kb_id: str,
        upload_id: str,
        *,
        attempt_id: str,
        now: datetime,
        keep_until: int,
        owner_id: str,
        size: int,
        capacity: KbCapacity,
        sha256: str | None = None,
    ) -> None: ...

    def update_upload_released(
        self, kb_id: str, upload_id: str, *, attempt_id: str, expires_at: int
    ) -> None: ...

    def update_upload_rejected(
        self, kb_id: str, upload_id: str, *, reason: str, expires_at: int, attempt_id: str | None
    ) -> None: ...

    def put_file_for_upload(
        self,
        file: FileRecord,
        *,
        owner_id: str,
        attempt_id: str,
        expires_at: int,
        capacity: KbCapacity,
        activity: ActivityRecord,
    ) -> FileRecord: ...

    def update_upload_expired(self, kb_id: str, upload_id: str, *, expires_at: int) -> None: ...

    def delete_decided_upload(self, kb_id: str, upload_id: str) -> None:
        """Delete a rejected or expired upload's record (nothing when there is none); ConditionFailed("upload")
        when it is in any other state."""
        ...

    def query_upload_queue(
        self, state: Literal["pending", "submitting"], before: datetime, limit: int
    ) -> list[UploadRecord]: ...

"""``ContentStore`` in memory, on the shared ``FakeTable``: folders, files and uploads; a replace's
writes come from ``FakeReplacementWrites`` (tests/support/fakes/replacements.py), as the adapter's do."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal

from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.records import ActivityRecord, FileRecord, FolderRecord, KbCapacity, UploadRecord
from tests.support.fakes.replacements import FakeReplacementWrites
from tests.support.fakes.table import FakeTable, _activity_sk, _Transaction


class FakeContentStore(FakeReplacementWrites):
    """``ContentStore`` as ``memmy_kb.adapters.dynamodb.contents.DynamoContentStore``."""

    def __init__(self, table: FakeTable | None = None) -> None:
        self.table = table if table is not None else FakeTable()

    def query_kb_items(self, kb_id: str) -> tuple[list[FolderRecord], list[FileRecord], list[UploadRecord]]:
        """Each family in sort-key order (by id), as the Query of the KB's partition returns them."""
        t = self.table
        return (
            [f.model_copy(deep=True) for (kid, _), f in sorted(t.folders.items()) if kid == kb_id],
            [f.model_copy(deep=True) for (kid, _), f in sorted(t.files.items()) if kid == kb_id],
            [u.model_copy(deep=True) for (kid, _), u in sorted(t.uploads.items()) if kid == kb_id],
        )

    def query_folders(self, kb_id: str) -> list[FolderRecord]:
        return [f.model_copy(deep=True) for (kid, _), f in sorted(self.table.folders.items()) if kid == kb_id]

    def get_folder(self, kb_id: str, folder_id: str) -> FolderRecord | None:
        folder = self.table.folders.get((kb_id, folder_id))
        return folder.model_copy(deep=True) if folder else None

    def get_file(self, kb_id: str, file_id: str) -> FileRecord | None:
        file = self.table.files.get((kb_id, file_id))
        return file.model_copy(deep=True) if file else None

    def get_upload(self, kb_id: str, upload_id: str) -> UploadRecord | None:
        upload = self.table.uploads.get((kb_id, upload_id))
        return upload.model_copy(deep=True) if upload else None

    def put_folder(self, folder: FolderRecord) -> None:
        t = self.table
        key = (folder.kb_id, folder.folder_id)
        txn = _Transaction()
        txn.add(("FOLDER", *key), key not in t.folders, lambda: t.seed(folder))
        txn.add(("KB", folder.kb_id), folder.kb_id in t.kbs)
        if folder.parent_id:
            parent = (folder.kb_id, folder.parent_id)
            txn.add(("FOLDER", *parent), parent in t.folders)
        failed = txn.run()
        if failed:
            raise ItemMissing("kb" if 1 in failed else "folder", folder.kb_id)

    def update_folder(
        self, folder: FolderRecord, previous: FolderRecord, ancestors: list[FolderRecord]
    ) -> None:
        t = self.table
        key = (folder.kb_id, folder.folder_id)
        current = t.folders.get(key)

        def move() -> None:
            t.folders[key] = t.folders[key].model_copy(
                update={"name": folder.name, "parent_id": folder.parent_id}
            )

        txn = _Transaction()
        txn.add(("FOLDER", *key), current is not None and current.parent_id == previous.parent_id, move)
        for ancestor in ancestors:
            seen = t.folders.get((ancestor.kb_id, ancestor.folder_id))
            unchanged = seen is not None and seen.parent_id == ancestor.parent_id
            txn.add(("FOLDER", ancestor.kb_id, ancestor.folder_id), unchanged)
        if txn.run():
            raise ConditionFailed("folders", folder.folder_id)

    def update_file_folder(self, kb_id: str, file_id: str, folder_id: str | None) -> None:
        t = self.table
        key = (kb_id, file_id)

        def point() -> None:
            t.files[key] = t.files[key].model_copy(update={"folder_id": folder_id})

        txn = _Transaction()
        txn.add(("FILE", *key), key in t.files, point)
        if folder_id:
            txn.add(("FOLDER", kb_id, folder_id), (kb_id, folder_id) in t.folders)
        failed = txn.run()
        if failed:
            raise ItemMissing("file" if 0 in failed else "folder", file_id)

    def put_upload(self, upload: UploadRecord, *, capacity: KbCapacity) -> None:
        t = self.table
        key = (upload.kb_id, upload.upload_id)
        txn = _Transaction()
        txn.add(("UPLOAD", *key), key not in t.uploads, lambda: t.seed(upload))
        txn.add(("KB", upload.kb_id), t.room(upload.kb_id, upload.owner_id, upload.size_bytes, capacity))
        failed = txn.run()
        if 1 in failed:
            raise t.room_refusal(upload.kb_id, upload.owner_id, capacity)
        if failed:
            raise ItemMissing("kb", upload.kb_id)

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
    ) -> None:
        t = self.table
        if self._pending(kb_id, upload_id) and not t.room(kb_id, owner_id, size, capacity):
            raise t.room_refusal(kb_id, owner_id, capacity)
        held: dict[str, object] = {
            "state": "submitting", "attempt_id": attempt_id, "submitting_at": now, "expires_at": keep_until
        }
        self._update_upload(
            kb_id, upload_id, lambda u: u.state == "pending", held | ({"content_sha256": sha256} if sha256 else {})
        )

    def _pending(self, kb_id: str, upload_id: str) -> bool:
        upload = self.table.uploads.get((kb_id, upload_id))
        return upload is not None and upload.state == "pending"

    def update_upload_released(self, kb_id: str, upload_id: str, *, attempt_id: str, expires_at: int) -> None:
        self._update_upload(
            kb_id,
            upload_id,
            lambda u: u.state == "submitting" and u.attempt_id == attempt_id,
            {"state": "pending", "expires_at": expires_at, "attempt_id": None, "submitting_at": None},
        )

    def update_upload_rejected(
        self, kb_id: str, upload_id: str, *, reason: str, expires_at: int, attempt_id: str | None
    ) -> None:
        """From pending, or from submitting held by ``attempt_id``; the holder's fields are kept, as in the adapter."""

        def holds(u: UploadRecord) -> bool:
            if attempt_id is None:
                return u.state == "pending"
            return u.state == "submitting" and u.attempt_id == attempt_id

        self._update_upload(
            kb_id, upload_id, holds, {"state": "rejected", "reason": reason, "expires_at": expires_at}
        )

    def update_upload_expired(self, kb_id: str, upload_id: str, *, expires_at: int) -> None:
        self._update_upload(
            kb_id, upload_id, lambda u: u.state == "pending", {"state": "expired", "expires_at": expires_at}
        )

    def delete_decided_upload(self, kb_id: str, upload_id: str) -> None:
        current = self.table.uploads.get((kb_id, upload_id))
        if current is None:
            return
        if current.state not in ("rejected", "expired"):
            raise ConditionFailed("upload", upload_id)
        del self.table.uploads[(kb_id, upload_id)]

    def query_upload_queue(
        self, state: Literal["pending", "submitting"], before: datetime, limit: int
    ) -> list[UploadRecord]:
        """GSI2's upload queues: pending by expiry, submitting by when the hold began, oldest first."""
        queue = sorted(
            (sort_key, u.kb_id, u.upload_id)
            for u in self.table.uploads.values()
            if u.state == state and (sort_key := _upload_queue_key(u)) is not None
        )
        due = [(kb_id, upload_id) for sort_key, kb_id, upload_id in queue if sort_key < before.isoformat()]
        return [self.table.uploads[key].model_copy(deep=True) for key in due[: max(0, limit)]]

    def put_file_for_upload(
        self,
        file: FileRecord,
        *,
        owner_id: str,
        attempt_id: str,
        expires_at: int,
        capacity: KbCapacity,
        activity: ActivityRecord,
    ) -> FileRecord:
        t = self.table
        file_key = (file.kb_id, file.file_id)
        upload_key = (file.kb_id, file.upload_id)
        upload = t.uploads.get(upload_key)

        def submitted() -> None:
            t.uploads[upload_key] = t.uploads[upload_key].model_copy(
                update={
                    "state": "submitted",
                    "file_id": file.file_id,
                    "memos_file_id": file.memos_file_id,
                    "expires_at": expires_at,
                }
            )

        txn = _Transaction()
        txn.add(("FILE", *file_key), file_key not in t.files, self._put(file))
        held = upload is not None and upload.state == "submitting" and upload.attempt_id == attempt_id
        txn.add(("UPLOAD", *upload_key), held, submitted)
        room = t.room(file.kb_id, owner_id, file.size_bytes, capacity)
        txn.add(("KB", file.kb_id), room, t.counted(file.kb_id, 1, file.size_bytes))
        if file.folder_id is not None:
            txn.add(("FOLDER", file.kb_id, file.folder_id), (file.kb_id, file.folder_id) in t.folders)
        txn.add(("ACTIVITY", activity.kb_id, _activity_sk(activity)), True, t.log(activity))
        failed = txn.run()
        refusal = t.room_refusal(file.kb_id, owner_id, capacity) if 2 in failed else None
        if isinstance(refusal, ItemMissing):
            raise refusal
        if 0 in failed or 1 in failed:
            raise ConditionFailed("upload", file.upload_id)
        if refusal is not None:
            raise refusal
        if failed:
            raise ItemMissing("folder", file.folder_id or "")
        return file

    # -- a replace (``memmy_kb.adapters.dynamodb.replacements``) ---------------------------------------

    def _put_upload(self, upload: UploadRecord) -> Callable[[], None]:
        def put() -> None:
            self.table.seed(upload)

        return put

    def _changed(self, key: tuple[str, str], changes: dict[str, object]) -> Callable[[], None]:
        def change() -> None:
            self.table.uploads[key] = self.table.uploads[key].model_copy(update=changes)

        return change

    def _put(self, record: FileRecord) -> Callable[[], None]:
        def put() -> None:
            self.table.seed(record)

        return put

    def _update_upload(
        self,
        kb_id: str,
        upload_id: str,
        condition: Callable[[UploadRecord], bool],
        changes: dict[str, object],
    ) -> UploadRecord:
        key = (kb_id, upload_id)
        current = self.table.uploads.get(key)
        if current is None or not condition(current):
            raise ConditionFailed("upload", upload_id)
        updated = current.model_copy(update=changes)
        self.table.uploads[key] = updated
        return updated.model_copy(deep=True)


def _upload_queue_key(upload: UploadRecord) -> str | None:
    """The upload's GSI2 sort key in its queue, as the adapter writes it (None: in no queue)."""
    if upload.state == "pending":
        return datetime.fromtimestamp(upload.expires_at, UTC).isoformat()
    if upload.state == "submitting" and upload.submitting_at is not None:
        return upload.submitting_at.isoformat()
    return None

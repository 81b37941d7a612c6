"""The replace's writes of ``ContentStore`` in memory, on the shared ``FakeTable``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.records import ActivityRecord, FileRecord, KbCapacity, UploadRecord
from tests.support.fakes.table import FakeTable, _activity_sk, _Transaction


class FakeReplacementWrites:
    """The replace's half of ``ContentStore`` (mixed into ``FakeContentStore``), as
    ``memmy_kb.adapters.dynamodb.replacements.ReplacementWrites`` is into the adapter."""

    table: FakeTable
    # ``FakeContentStore``'s: the uploads' own writes, and an upload's change as a transaction's action.
    update_upload_rejected: Callable[..., None]
    update_upload_released: Callable[..., None]
    update_upload_expired: Callable[..., None]
    _update_upload: Callable[..., UploadRecord]
    _changed: Callable[[tuple[str, str], dict[str, object]], Callable[[], None]]
    _put_upload: Callable[[UploadRecord], Callable[[], None]]

    def put_replacement(self, upload: UploadRecord, *, take_over: str | None, capacity: KbCapacity) -> None:
        assert upload.replaces is not None
        assert upload.if_version is not None
        t = self.table
        file = t.files.get((upload.kb_id, upload.replaces))
        holder = t.uploads.get((upload.kb_id, take_over)) if take_over else None

        def mark() -> None:
            t.files[(upload.kb_id, upload.replaces or "")] = t.files[(upload.kb_id, upload.replaces or "")].model_copy(
                update={"replacing": upload.upload_id}
            )

        txn = _Transaction()
        txn.add(("UPLOAD", upload.kb_id, upload.upload_id), (upload.kb_id, upload.upload_id) not in t.uploads, self._put_upload(upload))
        free = file is not None and file.version == upload.if_version and file.replacing == take_over
        txn.add(("FILE", upload.kb_id, upload.replaces), free, mark)
        txn.add(("KB", upload.kb_id), t.bytes_room(upload.kb_id, upload.owner_id, upload.growth, capacity))
        if take_over:
            txn.add(("UPLOAD", upload.kb_id, take_over), holder is None or holder.state != "submitting")
        failed = txn.run()
        if 2 in failed:
            raise t.bytes_refusal(upload.kb_id, upload.owner_id)
        if 1 in failed and file is None:
            raise ItemMissing("file", upload.replaces)
        if 0 in failed:
            raise ConditionFailed("upload", upload.upload_id)
        if failed:
            raise ConditionFailed("file", upload.replaces)

    def update_replacement_submitting(
        self,
        upload: UploadRecord,
        *,
        attempt_id: str,
        now: datetime,
        keep_until: int,
        sha256: str | None,
        capacity: KbCapacity,
    ) -> None:
        assert upload.replaces is not None
        t = self.table
        key = (upload.kb_id, upload.upload_id)
        current = t.uploads.get(key)
        file = t.files.get((upload.kb_id, upload.replaces))
        held: dict[str, object] = {
            "state": "submitting", "attempt_id": attempt_id, "submitting_at": now, "expires_at": keep_until,
        }
        txn = _Transaction()
        txn.add(("UPLOAD", *key), current is not None and current.state == "pending", self._changed(key, held | ({"content_sha256": sha256} if sha256 else {})))
        room = t.bytes_room(upload.kb_id, upload.owner_id, upload.growth, capacity)
        txn.add(("KB", upload.kb_id), room, t.counted(upload.kb_id, 0, upload.growth))
        ours = file is not None and file.replacing == upload.upload_id and file.version == upload.if_version
        txn.add(("FILE", upload.kb_id, upload.replaces), ours)
        failed = txn.run()
        if 0 in failed:
            raise ConditionFailed("upload", upload.upload_id)
        if 1 in failed:
            raise t.bytes_refusal(upload.kb_id, upload.owner_id)
        if failed:
            raise ItemMissing("file", upload.replaces) if file is None else ConditionFailed("file", upload.replaces)

    def update_replacement_released(self, upload: UploadRecord, *, attempt_id: str, expires_at: int) -> None:
        self.update_upload_released(upload.kb_id, upload.upload_id, attempt_id=attempt_id, expires_at=expires_at)
        self._give_back(upload)

    def update_replacement_rejected(
        self, upload: UploadRecord, *, reason: str, expires_at: int, attempt_id: str | None
    ) -> None:
        self.update_upload_rejected(
            upload.kb_id, upload.upload_id, reason=reason, expires_at=expires_at, attempt_id=attempt_id
        )
        self._unmark(upload)
        if attempt_id is not None:
            self._give_back(upload)

    def update_replacement_expired(self, upload: UploadRecord, *, expires_at: int) -> None:
        self.update_upload_expired(upload.kb_id, upload.upload_id, expires_at=expires_at)
        self._unmark(upload)

    def delete_pending_replacement(self, upload: UploadRecord) -> None:
        key = (upload.kb_id, upload.upload_id)
        current = self.table.uploads.get(key)
        if current is None or current.state != "pending":
            raise ConditionFailed("upload", upload.upload_id)
        del self.table.uploads[key]
        self._unmark(upload)

    def clear_replacing(self, kb_id: str, file_id: str, upload_id: str) -> bool:
        file = self.table.files.get((kb_id, file_id))
        if file is None or file.replacing != upload_id:
            return False
        self.table.files[(kb_id, file_id)] = file.model_copy(update={"replacing": None})
        return True

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
    ) -> None:
        t = self.table
        file_key = (file.kb_id, file.file_id)
        upload_key = (file.kb_id, file.upload_id)
        current = t.files.get(file_key)
        upload = t.uploads.get(upload_key)
        changes = {
            "version": file.version, "size_bytes": file.size_bytes, "upload_id": file.upload_id,
            "updated_at": file.updated_at, "replacing": None,
        } | ({"sha256": file.sha256} if file.sha256 else {})

        def moved_on() -> None:
            t.files[file_key] = t.files[file_key].model_copy(update=changes)

        submitted = {"state": "submitted", "file_id": file.file_id, "memos_file_id": file.memos_file_id, "expires_at": expires_at}
        txn = _Transaction()
        ours = current is not None and current.replacing == file.upload_id and current.version == replaced_version
        txn.add(("FILE", *file_key), ours, moved_on)
        held = upload is not None and upload.state == "submitting" and upload.attempt_id == attempt_id
        txn.add(("UPLOAD", *upload_key), held, self._changed(upload_key, submitted))
        txn.add(("KB", file.kb_id), t.owns(file.kb_id, owner_id), t.counted(file.kb_id, 0, min(0, shrink)))
        txn.add(("ACTIVITY", activity.kb_id, _activity_sk(activity)), True, t.log(activity))
        failed = txn.run()
        if 2 in failed:
            raise ItemMissing("kb", file.kb_id)
        if 1 in failed:
            raise ConditionFailed("upload", file.upload_id)
        if failed:
            raise ItemMissing("file", file.file_id) if current is None else ConditionFailed("file", file.file_id)

    def _unmark(self, upload: UploadRecord) -> None:
        if upload.replaces is not None:
            self.clear_replacing(upload.kb_id, upload.replaces, upload.upload_id)

    def _give_back(self, upload: UploadRecord) -> None:
        if upload.growth > 0 and upload.kb_id in self.table.kbs:
            self.table.counted(upload.kb_id, 0, -upload.growth)()

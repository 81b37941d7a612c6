"""An in-memory knowledge base behind the SDK calls a folder sync makes (``memmy_kb_client.sync.cloud.Cloud``),
for the sync's unit tests: folders, files with versions and hashes, uploads in flight shown by upload id,
``Idempotency-Key`` answered with the first ticket, replaces with ``if_version`` / ``unchanged`` /
``replace_in_progress``, and the ingest run by hand (``ingest()``). Every call is counted by name.

It keeps the API's answers' shape (docs/openapi.json: each answer is the ``replies`` type the SDK returns,
and mypy checks the fake is a ``CloudClient``, the SDK's calls as the SDK declares them), not its rules:
the real rules are exercised by tests/integration/sync/test_sync_api.py against the handlers.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from memmy_kb_client.replies import (
    File,
    FileListing,
    Folder,
    KnowledgeBase,
    Owner,
    ReplacementAnswer,
    ReplacementTicket,
    Role,
    UploadTicket,
)
from memmy_kb_client.sdk import MemmyApiError
from memmy_kb_client.storage_post import OpenFile

if TYPE_CHECKING:
    from memmy_kb_client.sync.cloud import CloudClient

_ids = itertools.count(1)
# The listing's reasons for a file the knowledge engine failed (``memmy_kb.domain.knowledge_bases.files``).
VERSION_FAILED = "The knowledge engine could not process this version; the previous version still answers."
MEMOS_FAILED = "The knowledge engine could not process this file."


# When every fake record was made and every ticket expires: the sync reads neither.
_AT = "2026-01-01T00:00:00Z"


def _new(prefix: str) -> str:
    return f"{prefix}_{next(_ids):05d}"


@dataclass
class FakeUpload:
    upload_id: str
    filename: str
    size: int
    folder_id: str | None
    sha256: str | None
    origin: str | None
    replaces: str | None = None
    if_version: int | None = None
    body: bytes | None = None  # what storage received
    state: str = "pending"  # pending, submitted, rejected
    reason: str | None = None


@dataclass
class FakeFile:
    file_id: str
    name: str
    folder_id: str | None
    version: int
    sha256: str
    upload_id: str
    origin: str | None
    replacing: str | None = None


@dataclass
class FakeKb:
    kb_id: str = "kb_1"
    role: Role = "owner"
    folders: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # id -> (name, parent)
    files: dict[str, FakeFile] = field(default_factory=dict)
    uploads: dict[str, FakeUpload] = field(default_factory=dict)
    keys: dict[str, UploadTicket] = field(default_factory=dict)  # an upload's Idempotency-Key: its ticket
    replace_keys: dict[str, ReplacementTicket] = field(default_factory=dict)  # a replace's
    calls: Counter[str] = field(default_factory=Counter)
    # Names whose upload is refused as this error (status, code, message).
    refuse: dict[str, tuple[int, str, str]] = field(default_factory=dict)
    # Bytes (by SHA-256) the knowledge engine fails: a file at them is listed ``failed``.
    engine_fails: set[str] = field(default_factory=set)

    # ---------------------------------------------------------------------------------- the SDK's calls

    def list_knowledge_bases(self) -> list[KnowledgeBase]:
        self.calls["list_knowledge_bases"] += 1
        return [self._kb(self.kb_id)]

    def get_knowledge_base(self, kb_id: str) -> KnowledgeBase:
        self.calls["get_knowledge_base"] += 1
        sizes = [self.uploads[f.upload_id].size for f in self.files.values() if f.upload_id in self.uploads]
        return {**self._kb(kb_id), "file_count": len(self.files), "bytes_used": sum(sizes)}

    def list_files(self, kb_id: str, folder_id: str | None = None) -> FileListing:
        self.calls["list_files"] += 1
        folders: list[Folder] = [
            {"id": f, "name": n, "parent_id": p} for f, (n, p) in self.folders.items() if p == folder_id
        ]
        rejected = self._rejected_replaces()
        entries = [self._file_entry(f, rejected) for f in self.files.values() if f.folder_id == folder_id]
        entries += [
            self._upload_entry(u)
            for u in self.uploads.values()
            if u.folder_id == folder_id and u.replaces is None and u.state != "submitted"
        ]
        return {"folders": folders, "files": entries}

    def get_file(self, kb_id: str, file_id: str) -> File:
        self.calls["get_file"] += 1
        if file_id not in self.files:
            raise MemmyApiError(404, "file_not_found", "No such file.")
        return self._file_entry(self.files[file_id], self._rejected_replaces())

    def create_folder(self, kb_id: str, name: str, parent_id: str | None = None) -> Folder:
        self.calls["create_folder"] += 1
        folder_id = _new("fo")
        self.folders[folder_id] = (name, parent_id)
        return {"id": folder_id, "name": name, "parent_id": parent_id}

    def request_upload(
        self,
        kb_id: str,
        filename: str,
        size_bytes: int,
        *,
        folder_id: str | None = None,
        idempotency_key: str | None = None,
        sha256: str | None = None,
        origin: str | None = None,
    ) -> UploadTicket:
        self.calls["request_upload"] += 1
        if idempotency_key in self.keys:
            return self.keys[idempotency_key]
        if filename in self.refuse:
            raise MemmyApiError(*self.refuse[filename])
        upload = FakeUpload(_new("up"), filename, size_bytes, folder_id, sha256, origin)
        self.uploads[upload.upload_id] = upload
        ticket = self._ticket(upload)
        if idempotency_key is not None:
            self.keys[idempotency_key] = ticket
        return ticket

    def request_replacement(
        self,
        kb_id: str,
        file_id: str,
        size_bytes: int,
        *,
        sha256: str | None = None,
        if_version: int | None = None,
        idempotency_key: str | None = None,
    ) -> ReplacementAnswer:
        self.calls["request_replacement"] += 1
        if idempotency_key in self.replace_keys:
            return self.replace_keys[idempotency_key]
        file = self.files.get(file_id)
        if file is None:
            raise MemmyApiError(404, "file_not_found", "No such file.")
        if if_version is not None and if_version != file.version:
            raise MemmyApiError(409, "version_conflict", "The file is at another version.")
        if file.replacing is not None:
            raise MemmyApiError(409, "replace_in_progress", "The file is being replaced.")
        if sha256 == file.sha256 and sha256 not in self.engine_fails:  # a failed version takes the same bytes
            return {"status": "unchanged", "file_id": file_id, "version": file.version}
        upload = FakeUpload(
            _new("up"), file.name, size_bytes, file.folder_id, sha256, None, file_id, file.version
        )
        self.uploads[upload.upload_id] = upload
        file.replacing = upload.upload_id
        ticket: ReplacementTicket = {
            **self._ticket(upload),
            "status": "issued",
            "file_id": file_id,
            "replaces_version": file.version,
        }
        if idempotency_key is not None:
            self.replace_keys[idempotency_key] = ticket
        return ticket

    def delete_file(self, kb_id: str, file_id: str) -> str:
        self.calls["delete_file"] += 1
        if self.files.pop(file_id, None) is None:
            raise MemmyApiError(404, "file_not_found", "No such file.")
        return "cl_1"

    def dismiss_upload(self, kb_id: str, upload_id: str) -> None:
        self.calls["dismiss_upload"] += 1
        upload = self.uploads.pop(upload_id, None)
        file = self.files.get(upload.replaces or "") if upload is not None else None
        if file is not None and file.replacing == upload_id:  # a replace not sent on: its file is free again
            file.replacing = None

    def close(self) -> None:
        self.calls["close"] += 1

    def send(self, ticket: UploadTicket, source: OpenFile) -> None:
        """Storage receiving the bytes of a ticket's POST, read from the open file the pass hands over."""
        self.calls["send"] += 1
        self.uploads[ticket["upload_id"]].body = source.read()

    # ---------------------------------------------------------------------------------- the cloud's side

    def ingest(self) -> None:
        """Every upload whose bytes arrived becomes a file, or the next version of its file."""
        for upload in self.uploads.values():
            if upload.state != "pending" or upload.body is None:
                continue
            digest = hashlib.sha256(upload.body).hexdigest()
            if upload.sha256 is not None and digest != upload.sha256:
                upload.state, upload.reason = "rejected", "sha256_mismatch"
                if upload.replaces in self.files:
                    self.files[upload.replaces].replacing = None
                continue
            upload.state = "submitted"
            if upload.replaces is None:
                file_id = _new("fi")
                self.files[file_id] = FakeFile(
                    file_id, upload.filename, upload.folder_id, 1, digest, upload.upload_id, upload.origin
                )
            else:
                file = self.files[upload.replaces]
                file.version, file.sha256, file.upload_id, file.replacing = (
                    file.version + 1,
                    digest,
                    upload.upload_id,
                    None,
                )

    def upload_by_hand(self, name: str, body: bytes, folder_id: str | None = None) -> str:
        """A file uploaded by other means (the page, ``files upload``): no sync origin."""
        file_id, upload_id = _new("fi"), _new("up")
        digest = hashlib.sha256(body).hexdigest()
        self.files[file_id] = FakeFile(file_id, name, folder_id, 1, digest, upload_id, None)
        return file_id

    def paths(self) -> dict[str, tuple[int, str]]:
        """Each file's path of folder names, with its version and hash."""
        return {self._path(f): (f.version, f.sha256) for f in self.files.values()}

    def _path(self, file: FakeFile) -> str:
        parts, folder = [file.name], file.folder_id
        while folder is not None:
            name, folder = self.folders[folder]
            parts.insert(0, name)
        return "/".join(parts)

    def _kb(self, kb_id: str) -> KnowledgeBase:
        owner: Owner = {"user_id": "u_owner", "display_name": "Owner"}
        return {"id": kb_id, "name": "KB", "role": self.role, "recall": True, "owner": owner, "created_at": _AT}

    def _ticket(self, upload: FakeUpload) -> UploadTicket:
        return {"upload_id": upload.upload_id, "url": "http://storage", "fields": {}, "expires_at": _AT}

    def _file_entry(self, file: FakeFile, rejected: list[FakeUpload]) -> File:
        failed = file.sha256 in self.engine_fails
        entry: File = {
            "id": file.file_id,
            "name": file.name,
            "status": "failed" if failed else "available",
            "reason": (VERSION_FAILED if file.version > 1 else MEMOS_FAILED) if failed else None,
            "folder_id": file.folder_id,
            "upload_id": file.upload_id,
            "version": file.version,
            "sha256": file.sha256,
            "origin": "sync" if file.origin == "sync" else None,  # the only origin the API takes
        }
        rejects = [u for u in rejected if u.replaces == file.file_id]
        if file.replacing is not None:
            entry["replacement"] = {"upload_id": file.replacing, "status": "uploading"}
        elif rejects and rejects[-1].if_version == file.version:
            entry["replacement"] = {
                "upload_id": rejects[-1].upload_id,
                "status": "failed",
                "reason": rejects[-1].reason,
            }
        return entry

    def _rejected_replaces(self) -> list[FakeUpload]:
        return [u for u in self.uploads.values() if u.replaces is not None and u.state == "rejected"]

    def _upload_entry(self, upload: FakeUpload) -> File:
        status: Literal["failed", "uploading"] = "failed" if upload.state == "rejected" else "uploading"
        return {
            "id": upload.upload_id,
            "name": upload.filename,
            "status": status,
            "folder_id": upload.folder_id,
            "upload_id": upload.upload_id,
            "reason": upload.reason,
        }


if TYPE_CHECKING:
    # The fake answers every call a folder's sync makes, as the SDK declares it (mypy fails on a drift).
    _THE_FAKE_IS_A_CLOUD: type[CloudClient] = FakeKb

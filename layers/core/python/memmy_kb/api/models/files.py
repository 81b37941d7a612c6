"""``/knowledge-bases/{kb_id}/files`` and ``/folders``: the listing, moves, folders made and changed."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from memmy_kb.api.models.base import ApiModel, Name
from memmy_kb.domain.display import shown
from memmy_kb.domain.knowledge_bases.files import FileState
from memmy_kb.domain.uploads.reasons import reason_code

if TYPE_CHECKING:
    from memmy_kb.domain.knowledge_bases.files import FileEntry, Listing
    from memmy_kb.records import FolderRecord


class Folder(ApiModel):
    id: str
    name: str
    parent_id: str | None = None

    @classmethod
    def from_record(cls, record: FolderRecord) -> Folder:
        return cls(id=record.folder_id, name=shown(record.name), parent_id=record.parent_id)


class Replacement(ApiModel):
    """The file's replace in flight (`uploading`), or its last one that `failed` (the file keeps its current
    version). DELETE .../uploads/{upload_id} dismisses a failed one, or one in flight not yet sent on."""

    upload_id: str
    status: Literal["uploading", "failed"]
    reason: str | None = Field(default=None, description="Why it failed, in English")
    reason_code: str | None = Field(default=None, description="Why it failed, as a code (see the file's)")


class File(ApiModel):
    id: str
    name: str
    status: FileState
    size_bytes: int | None = None
    folder_id: str | None = None
    reason: str | None = Field(default=None, description="Why it failed, in English")
    reason_code: str | None = Field(
        default=None,
        description="Why it failed, as a code to word in any language (invalid_pdf, kb_gone, engine_failed,"
        " ...; `other` for a reason without its own code)",
    )
    upload_id: str | None = Field(
        default=None, description="The upload this file's current version came from"
    )
    version: int | None = Field(
        default=None,
        description="The file's version: 1 for its first upload, one more for each replace recorded",
    )
    sha256: str | None = Field(
        default=None,
        description="The SHA-256 of the current version's bytes (none on files from before hashes)",
    )
    updated_at: datetime | None = Field(default=None, description="When the current version was recorded")
    replacement: Replacement | None = Field(
        default=None, description="A replace of this file in flight, or failed"
    )
    origin: Literal["sync"] | None = Field(
        default=None,
        description="`sync` when a folder sync uploaded it: a sync of the knowledge base may replace"
        " or delete it (docs/sync.md)",
    )

    @classmethod
    def from_entry(cls, entry: FileEntry) -> File:
        # The name may come live from MemOS, which keeps whatever it was given.
        replacement = None
        if entry.replacement is not None:
            r = entry.replacement
            replacement = Replacement(
                upload_id=r.upload_id, status=r.status, reason=r.reason, reason_code=reason_code(r.reason)
            )
        return cls.model_validate(entry, from_attributes=True).model_copy(
            update={
                "name": shown(entry.name),
                "reason_code": reason_code(entry.reason),
                "replacement": replacement,
            }
        )


class FileListing(ApiModel):
    folders: list[Folder]
    files: list[File]
    refresh_after_seconds: int | None = None

    @classmethod
    def from_listing(cls, listing: Listing) -> FileListing:
        return cls(
            folders=[Folder.from_record(f) for f in listing.folders],
            files=[File.from_entry(f) for f in listing.files],
            refresh_after_seconds=listing.refresh_after_seconds,
        )


class CreateFolderRequest(ApiModel):
    name: Name
    parent_id: str | None = None


class UpdateFolderRequest(ApiModel):
    """``parent_id`` given as null moves the folder to the root; left out, it stays where it is."""

    name: Name | None = None
    parent_id: str | None = None


class MoveFileRequest(ApiModel):
    folder_id: str | None = Field(description="The destination folder; null for the root")

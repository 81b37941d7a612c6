"""One name per folder: file and folder names are stored in one form, and two siblings never share one.

A name is stored trimmed and in Unicode NFC (``normal_name``), so `` lead.md`` and ``lead.md``, or ``café.md``
typed on a Mac (NFD) and on Windows (NFC), are the same name. A new file's name is refused when a file in
the same folder already has it after that normalisation, or another upload of that name into the folder is
past its checks (``submitting``); a folder's when a sibling folder has it. The refusal is a 409
``name_taken`` that names the sibling (its id and name), so a client can offer to replace it instead.

Where it is checked (docs/uploads.md, "One name per folder"): when an upload is asked for, and again by
the ingest once it holds the upload (``submitting``), before MemOS is called: of two uploads of one name
asked for at once, the second to be held sees the first and is rejected with its reason. Both are held
before either looks, so at least one sees the other; two whose holds and looks interleave exactly may
both be rejected, never both become files. A move or a folder's create or rename is checked against what
one consistent read of the KB shows.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from memmy_kb.errors import Conflict

if TYPE_CHECKING:  # types only: the recall handler's bodies import ``normal_name``, never the records
    from memmy_kb.records import FileRecord, FolderRecord, UploadRecord

# The reasons an upload is rejected with at the ingest (``memmy_kb.domain.uploads.reasons``: ``name_taken``).
NAME_TAKEN: Final = "A file of this name is already in this folder; replace it instead."
NAME_RACED: Final = (
    "Another upload of this name into this folder was being checked at the same time; upload it again."
)


def normal_name(name: str) -> str:
    """``name`` as it is stored and compared: Unicode NFC, without leading or trailing white space."""
    return unicodedata.normalize("NFC", name).strip()


@dataclass(frozen=True)
class Sibling:
    """What already holds a name: a ``file`` (its file id), an ``upload`` being checked (its upload id) or
    a ``folder`` (its folder id)."""

    kind: str
    id: str
    name: str


def file_name_holder(
    name: str,
    folder_id: str | None,
    files: Iterable[FileRecord],
    uploads: Iterable[UploadRecord] = (),
    *,
    ignore_file: str | None = None,
    ignore_upload: str | None = None,
) -> Sibling | None:
    """The file in ``folder_id`` (None: the root), or the upload into it past its checks, whose name equals
    ``name`` once both are normalised; None when the name is free. A replace is no new name: never counted."""
    wanted = normal_name(name)
    for file in files:
        if file.folder_id == folder_id and file.file_id != ignore_file and normal_name(file.name) == wanted:
            return Sibling("file", file.file_id, file.name)
    for upload in uploads:
        if (
            upload.folder_id == folder_id
            and upload.replaces is None
            and upload.state == "submitting"
            and upload.upload_id != ignore_upload
            and normal_name(upload.filename) == wanted
        ):
            return Sibling("upload", upload.upload_id, upload.filename)
    return None


def folder_name_holder(
    name: str, parent_id: str | None, folders: Iterable[FolderRecord], *, ignore: str | None = None
) -> Sibling | None:
    """The folder under ``parent_id`` (None: the root) named ``name`` once both are normalised."""
    wanted = normal_name(name)
    for folder in folders:
        if folder.parent_id == parent_id and folder.folder_id != ignore and normal_name(folder.name) == wanted:
            return Sibling("folder", folder.folder_id, folder.name)
    return None


def name_taken(sibling: Sibling) -> Conflict:
    """The 409 for a name a sibling has: its kind, id and name in ``details``."""
    what = {"file": "A file", "upload": "An upload being checked", "folder": "A folder"}[sibling.kind]
    hint = " Replace it, or choose another name." if sibling.kind == "file" else " Choose another name."
    return Conflict(
        f"{what} named {sibling.name!r} is already in this folder.{hint}",
        code="name_taken",
        details={"kind": sibling.kind, "id": sibling.id, "name": sibling.name},
    )


def taken_reason(sibling: Sibling) -> str:
    """Why the ingest rejected an upload whose name a sibling has (the upload's ``reason``)."""
    return NAME_TAKEN if sibling.kind == "file" else NAME_RACED

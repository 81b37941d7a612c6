"""What the cloud's ``POST /recall`` reply says of the document an excerpt comes from, as ``memmy-kb recall``
and ``memmy-kb mcp`` read it: ``file``, the one file the excerpt's text was found in, or ``files``, the few
candidates when several files hold that text, each ``{id, name, folder_path, version, knowledge_base_id}``
(``folder_path`` "" at the knowledge base's root, else its folders' names joined by "/"); and how an
excerpt is cited by it, ``《name》 § heading``. A value of another shape is read as no file: an excerpt is
never attributed to a document the reply does not name plainly."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from memmy_kb_client import replies


class RecallFile(TypedDict):
    """A file an excerpt comes from, as the reply names it (its names are other people's text), once read:
    the reply's ``replies.RecallFile`` with what is missing or of another shape None (``folder_path`` "")."""

    id: str
    name: str
    folder_path: str
    version: int | None
    knowledge_base_id: str | None


def read_file(value: replies.RecallFile | None) -> RecallFile | None:
    """``value`` (an item's ``file``) as a ``RecallFile``; None unless it has a string id and name (a reply
    is read warily: a field the type promises may still be missing or of another type)."""
    if not isinstance(value, dict):
        return None
    file_id, name = value.get("id"), value.get("name")
    if not isinstance(file_id, str) or not isinstance(name, str) or not file_id or not name:
        return None
    folder, version, kb_id = value.get("folder_path"), value.get("version"), value.get("knowledge_base_id")
    return {
        "id": file_id,
        "name": name,
        "folder_path": folder.strip("/") if isinstance(folder, str) else "",
        "version": version if isinstance(version, int) and not isinstance(version, bool) else None,
        "knowledge_base_id": kb_id if isinstance(kb_id, str) else None,
    }


def read_files(value: list[replies.RecallFile] | None) -> list[RecallFile]:
    """``value`` (an item's ``files``, the candidates) as ``RecallFile`` s, leaving out any of another shape."""
    if not isinstance(value, list):
        return []
    return [file for file in map(read_file, value) if file is not None]


def document_path(file: RecallFile) -> str:
    """The file's path of names in its knowledge base: ``policies/2024/handbook.md``, or its name at the root."""
    return f"{file['folder_path']}/{file['name']}" if file["folder_path"] else file["name"]


def section_of(title: object, file: RecallFile) -> str:
    """The excerpt's section heading to cite after the file's name (``《handbook.md》 § Refunds``); "" when
    the reply has none, or its heading is only the file's name again."""
    heading = title.strip() if isinstance(title, str) else ""
    name = file["name"].strip()
    stem = name.rpartition(".")[0] or name
    return "" if heading in ("", name, stem) else heading

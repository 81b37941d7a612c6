"""The knowledge base's side of a pass: its whole tree, read one listing per folder (the listing is the
only read: a pass with nothing to do makes 1 + the number of the KB's folders calls, whatever the number
of files), with each entry's path of folder names."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from memmy_kb_client.replies import File, Replacement

if TYPE_CHECKING:
    from memmy_kb_client.sync.cloud import Lister

# The marker an upload made by a sync carries into its file (``origin`` in the listing).
SYNC_ORIGIN = "sync"


def normal_name(name: str) -> str:
    """A file or folder name as the service stores it: trimmed, in Unicode NFC."""
    return unicodedata.normalize("NFC", name).strip()


@dataclass(frozen=True)
class Entry:
    """One entry of the KB: a file (``version`` set) or an upload not (or never) a file yet."""

    id: str
    name: str
    folder: str  # the folder's path of names from the root, "" for the root
    folder_id: str | None
    status: str
    version: int | None = None
    sha256: str | None = None
    upload_id: str | None = None
    origin: str | None = None
    reason: str | None = None
    replacement: Replacement | None = None

    @property
    def path(self) -> str:
        return f"{self.folder}/{self.name}" if self.folder else self.name

    def replacement_field(self, key: Literal["upload_id", "status", "reason"]) -> str | None:
        """A field of the replace shown beside the file (in flight or failed); None without one."""
        return self.replacement.get(key) if self.replacement else None

    @property
    def is_file(self) -> bool:
        return self.version is not None

    @property
    def synced(self) -> bool:
        """Brought in by a sync (of any desktop): a sync may take it over; one uploaded otherwise, never."""
        return self.origin == SYNC_ORIGIN

    @classmethod
    def from_api(cls, item: File, folder: str) -> Entry:
        return cls(
            id=str(item["id"]),
            name=str(item["name"]),
            folder=folder,
            folder_id=item.get("folder_id"),
            status=str(item.get("status")),
            version=item.get("version"),
            sha256=item.get("sha256"),
            upload_id=item.get("upload_id"),
            origin=item.get("origin"),
            reason=item.get("reason"),
            replacement=item.get("replacement"),
        )


@dataclass(frozen=True)
class Tree:
    """The KB as a pass sees it: folder paths to ids (the first of same-named siblings), every entry, and
    how many listings it took."""

    folders: dict[str, str]
    entries: list[Entry]
    listings: int

    def by_id(self) -> dict[str, Entry]:
        return {e.id: e for e in self.entries if e.is_file}

    def by_upload(self) -> dict[str, Entry]:
        """Entries by the upload they came from: a file by its current version's, an upload by its own."""
        return {e.upload_id: e for e in self.entries if e.upload_id}

    def by_replacement(self) -> dict[str, Entry]:
        """Files by the upload id of the replace shown beside them (in flight or failed)."""
        return {str(e.replacement["upload_id"]): e for e in self.entries if e.replacement}

    def at_path(self) -> dict[str, list[Entry]]:
        """Entries by their path, each name in the form the service stores now (trimmed, NFC), so a name
        stored before in another form is found where the folder's file would go."""
        found: dict[str, list[Entry]] = {}
        for entry in self.entries:
            name = normal_name(entry.name)
            found.setdefault(f"{entry.folder}/{name}" if entry.folder else name, []).append(entry)
        return found


def read_tree(client: Lister, kb_id: str) -> Tree:
    """Every folder and entry of ``kb_id``, breadth first from the root."""
    folders: dict[str, str] = {}
    entries: list[Entry] = []
    queue: list[tuple[str | None, str]] = [(None, "")]
    listings = 0
    while queue:
        folder_id, path = queue.pop(0)
        listing = client.list_files(kb_id, folder_id)
        listings += 1
        entries += [Entry.from_api(item, path) for item in listing["files"]]
        for folder in listing["folders"]:
            name = normal_name(str(folder["name"]))
            child = f"{path}/{name}" if path else name
            # Same-named siblings: both are read (their files keep their path), new files go to the first.
            folders.setdefault(child, str(folder["id"]))
            queue.append((str(folder["id"]), child))
    return Tree(folders, entries, listings)

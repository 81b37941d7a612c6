"""A knowledge base's folders: created, renamed and moved by the owner, never into their own subtree.

MemOS has no folders; they are ours alone. A move's cycle check is enforced by the storage write itself
(every ancestor of the destination is condition-checked), so two concurrent moves cannot close a cycle.

A folder is **live** only while its whole chain of parents reaches the root: deleting a folder removes
its item first and sweeps its subtree afterwards (``memmy_kb.domain.deletion.delete``), and in between nothing
under it may be listed, uploaded into, moved into or built on.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Final

from memmy_kb.domain.access import require_owner
from memmy_kb.domain.knowledge_bases.sibling_names import folder_name_holder, name_taken, normal_name
from memmy_kb.domain.ports.contents import ContentStore
from memmy_kb.domain.ports.knowledge_bases import GrantReader
from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.errors import Conflict, InvalidInput, folder_not_found, kb_not_found
from memmy_kb.records import FolderRecord, utc_now

# Deep enough for any real tree; bounded so a move's cycle check stays one transaction (<= 100 items).
MAX_FOLDER_DEPTH: Final = 20


def new_folder_id() -> str:
    # The OS's CSPRNG, as ``secrets.token_hex`` reads it, without the ``secrets`` module's hashlib and hmac
    # in the import of every function that lists files.
    return "fo_" + os.urandom(10).hex()


def create_folder(
    grants: GrantReader,
    contents: ContentStore,
    user_id: str,
    kb_id: str,
    name: str,
    parent_id: str | None,
    *,
    clock: Callable[[], datetime] = utc_now,
    new_id: Callable[[], str] = new_folder_id,
) -> FolderRecord:
    """A new folder under ``parent_id`` (None: the root), owner only; its name stored normalised, and one a
    sibling folder has refused (409 ``name_taken``)."""
    require_owner(grants, user_id, kb_id)
    name = normal_name(name)
    folders = {f.folder_id: f for f in contents.query_folders(kb_id)}
    if parent_id is not None:
        if not is_live(folders, parent_id):
            raise folder_not_found()
        if len(_chain(folders, parent_id)) >= MAX_FOLDER_DEPTH:
            raise _too_deep()
    _refuse_taken(name, parent_id, folders)
    folder = FolderRecord(kb_id=kb_id, folder_id=new_id(), name=name, parent_id=parent_id, created_at=clock())
    try:
        contents.put_folder(folder)
    except ItemMissing as missing:
        # The KB deleted since the owner's grant was read, or the parent folder since it was listed.
        raise (kb_not_found() if missing.item == "kb" else folder_not_found()) from None
    return folder


def update_folder(
    grants: GrantReader,
    contents: ContentStore,
    user_id: str,
    kb_id: str,
    folder_id: str,
    *,
    name: str | None,
    parent_id: str | None,
    move: bool,
) -> FolderRecord:
    """Rename and/or move (``move``: ``parent_id`` was given, None meaning the root) a folder.

    Moving a folder into itself or its own subtree is refused with 409, as is a name (the new one, or the
    folder's own where it moves) that a folder of its new parent has.
    """
    require_owner(grants, user_id, kb_id)
    folders = {f.folder_id: f for f in contents.query_folders(kb_id)}
    current = folders.get(folder_id)
    if current is None or not is_live(folders, folder_id):
        raise folder_not_found()
    new_parent = parent_id if move else current.parent_id
    ancestors: list[FolderRecord] = []
    if move and new_parent is not None:
        if not is_live(folders, new_parent):
            raise folder_not_found()
        ancestors = _chain(folders, new_parent)
        if any(a.folder_id == folder_id for a in ancestors):
            raise Conflict("A folder cannot move into itself or its own subfolders.", code="folder_cycle")
        if len(ancestors) + _height(folders, folder_id) > MAX_FOLDER_DEPTH:
            raise _too_deep()
    new_name = normal_name(name) if name else current.name
    if new_name != current.name or new_parent != current.parent_id:
        _refuse_taken(new_name, new_parent, folders, ignore=folder_id)
    updated = current.model_copy(update={"name": new_name, "parent_id": new_parent})
    try:
        contents.update_folder(updated, current, ancestors)
    except ConditionFailed:
        raise Conflict("The folders changed at the same time; try again.", code="folders_changed") from None
    return updated


def is_live(folders: Mapping[str, FolderRecord], folder_id: str) -> bool:
    """Whether ``folder_id`` exists and every folder above it does, up to the root: its chain reaches a
    top-level folder instead of stopping at a missing one (or a cycle)."""
    chain = _chain(folders, folder_id)
    return bool(chain) and chain[-1].parent_id is None


def require_live_folder(contents: ContentStore, kb_id: str, folder_id: str | None) -> None:
    """404 ``folder_not_found`` unless ``folder_id`` (None: the root) is live (one Query of the folders)."""
    if folder_id is not None and not is_live({f.folder_id: f for f in contents.query_folders(kb_id)}, folder_id):
        raise folder_not_found()


def _refuse_taken(
    name: str, parent_id: str | None, folders: Mapping[str, FolderRecord], *, ignore: str | None = None
) -> None:
    """409 ``name_taken`` when a live folder under ``parent_id`` has ``name`` once both are normalised."""
    live = [f for f in folders.values() if is_live(folders, f.folder_id)]
    sibling = folder_name_holder(name, parent_id, live, ignore=ignore)
    if sibling is not None:
        raise name_taken(sibling)


def _too_deep() -> InvalidInput:
    return InvalidInput(f"Folders nest at most {MAX_FOLDER_DEPTH} deep.", code="folder_too_deep")


def _chain(folders: Mapping[str, FolderRecord], folder_id: str) -> list[FolderRecord]:
    """``folder_id`` and its ancestors up to the root (stops on a cycle, which writes never create)."""
    chain: list[FolderRecord] = []
    seen: set[str] = set()
    current: str | None = folder_id
    while current is not None and current in folders and current not in seen:
        seen.add(current)
        chain.append(folders[current])
        current = folders[current].parent_id
    return chain


def _height(folders: dict[str, FolderRecord], folder_id: str) -> int:
    """Levels in the subtree rooted at ``folder_id`` (1 for a folder without subfolders)."""
    children = [f.folder_id for f in folders.values() if f.parent_id == folder_id]
    return 1 + max((_height(folders, c) for c in children), default=0)

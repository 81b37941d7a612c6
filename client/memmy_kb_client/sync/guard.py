"""What holds a pass back: deletions that wait for a confirmation, counted since the last one (so deleting
a quarter at a time adds up), and uploads not asked for while the KB has no room (docs/sync.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, TypeVar

if TYPE_CHECKING:
    from memmy_kb_client.sync.local import FolderScan
    from memmy_kb_client.sync.store import NoRoom

StepT = TypeVar("StepT")


# The reasons that do not name how many files would go (the share's reason does: ``it would delete 3 of
# the 4 files ...``), so a question asking about them says the number.
FOLDER_MISSING: Final = "the folder is missing (an unmounted disk?)"
FOLDER_EMPTY: Final = "the folder is empty"
UNCOUNTED_REASONS: Final = frozenset({FOLDER_MISSING, FOLDER_EMPTY})


def why_confirm(scan: FolderScan, deleting: int, synced: int, before: int, share: float) -> str | None:
    """Why a pass deleting ``deleting`` files waits for a confirmation (None: it need not). ``synced``: the
    files this folder's sync brought in and the KB holds; ``before``: those it deleted since the last
    confirmation, counted in on both sides, so a share deleted a little at a time is the same share."""
    if not deleting:
        return None
    if not scan.exists:
        return FOLDER_MISSING
    if not scan.files and not scan.skipped:
        return FOLDER_EMPTY
    if deleting + before <= share * (synced + before):
        return None
    said = f"it would delete {deleting} of the {synced} files this folder's sync brought in"
    if before:
        said += (
            f", {deleting + before} of {synced + before} since the last confirmation"
            f" ({before} deleted already)"
        )
    return said


def held_for_room(
    no_room: NoRoom | None, uploads: list[StepT], replaces: list[StepT]
) -> tuple[list[StepT], list[StepT], list[StepT]]:
    """The uploads and replaces to ask for, and those held: while the KB has had no room since its last
    refusal, nothing it would refuse again is asked for (a full KB is not sent one refused request per
    waiting file at every pass). A full file count holds the uploads; full storage, the replaces too."""
    if no_room is None:
        return uploads, replaces, []
    if no_room.code == "kb_file_limit_reached":
        return [], replaces, uploads
    return [], [], [*uploads, *replaces]

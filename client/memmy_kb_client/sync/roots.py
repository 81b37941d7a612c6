"""Which folders a sync takes, what one folder is however it is reached, and how much one pass may send
before it asks (docs/sync.md, "Which folders").

A folder is known by its real path (links resolved), so an alias of it (a symbolic link, ``..`` in the
path) shares its records, its pass lock and its link. Refused outright: ``/`` (a drive's root), the
home directory itself, and a folder in or holding a memmy-kb home (its state: logins, tokens, sync
records): the current ``$MEMMY_KB_HOME`` or any other, told by the files the desktop keeps there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from memmy_kb_client.home import paths

# A pass that would send more files than this stops for ``--yes`` (a link: pauses for its confirmation).
MAX_FILES_WITHOUT_YES: Final = 5000

# What a memmy-kb home holds, in ``desktop/`` or ``desktop-private/``: any one of them marks it.
_STATE_DIRS: Final = ("desktop", paths.PRIVATE_DIR)
_MARKERS: Final = (
    paths.LOGIN_FILE,
    paths.CONTROL_FILE,
    paths.CONTROL_TOKEN_FILE,
    paths.SERVICE_FILE,
    paths.HOOK_TOKEN_FILE,
    paths.LOCK_FILE,
    "sync/sync.sqlite3",
)


def real_root(directory: str | Path) -> Path:
    """The folder's identity: its absolute path with every link resolved (``~`` expanded)."""
    return Path(os.path.realpath(os.path.expanduser(str(directory))))


def same_folder(one: str | Path, other: str | Path) -> bool:
    """Whether two paths reach one folder: the same real path, or the same device and inode (a bind mount,
    a case-insensitive disk's other spelling). Missing folders compare by real path only."""
    if real_root(one) == real_root(other):
        return True
    try:
        return os.path.samefile(one, other)
    except OSError:
        return False


def is_state_home(directory: str | Path) -> bool:
    """Whether ``directory`` is a memmy-kb home: a ``desktop/`` or ``desktop-private/`` in it holds one of
    the files the desktop keeps (its login, control or service record, hook token, lock, sync records)."""
    for sub in _STATE_DIRS:
        state = os.path.join(directory, sub)
        if os.path.isdir(state) and any(os.path.isfile(os.path.join(state, m)) for m in _MARKERS):
            return True
    return False


def root_refused(root: Path) -> str | None:
    """Why ``root`` (a real path: ``real_root``) can be no folder to sync, in a sentence; None when it can."""
    if root.parent == root:
        return f"{root} is a whole disk, not a folder of documents: sync or link a folder in it"
    if same_folder(root, os.path.expanduser("~")):
        return f"{root} is your home directory itself: sync or link a folder of documents in it instead"
    state = _state_home_at_or_above(root)
    if state is not None:
        return f"{root} is in a memmy-kb home ({state}), which holds logins and sync records: it is never synced"
    inside = state_home_in(root)
    if inside is not None:
        return (
            f"{root} holds a memmy-kb home ({inside}), which holds logins and sync records: sync or link a"
            " folder without one"
        )
    return None


def _state_home_at_or_above(root: Path) -> Path | None:
    own = real_root(paths.memmy_home())
    for folder in (root, *root.parents):
        if folder == own or is_state_home(folder):
            return folder
    return None


def state_home_in(root: Path) -> Path | None:
    """The first memmy-kb home under ``root``, hidden or not (``.memmy-kb``), or None. Links are not
    followed; a hidden folder is looked at (a few ``stat``s) but not walked, nor is a home."""
    own = real_root(paths.memmy_home())
    for here, folders, _ in os.walk(root, followlinks=False, onerror=lambda _: None):
        at = Path(here)
        if at != root and any(sub in folders for sub in _STATE_DIRS) and is_state_home(at):
            return at
        keep = []
        for name in sorted(folders):
            child = at / name
            if child == own or (name.startswith(".") and is_state_home(child)):
                return child
            if not name.startswith("."):
                keep.append(name)
        folders[:] = keep
    return None


def too_many_to_send(files: int, size: int) -> str | None:
    """Why a pass that would send ``files`` files of ``size`` bytes in all asks first, or None."""
    if files <= MAX_FILES_WITHOUT_YES:
        return None
    return (
        f"it would send {files:,} files ({size / 1e6:,.1f} MB), more than {MAX_FILES_WITHOUT_YES:,} at once:"
        " check that this is the folder you mean"
    )

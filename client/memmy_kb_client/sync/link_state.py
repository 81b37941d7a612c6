"""What the desktop service keeps and shows of one linked folder (``sync.links``), and how it tells the
folder is still the one it watches: a folder renamed away, unmounted or put back at its path is noticed by
looking, not only by a file event (docs/sync.md, "Linked folders in the desktop service")."""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict, cast

# What a folder is at its path, as last seen: its device and inode, or None while no folder is there.
Identity = tuple[int, int] | None


def folder_identity(root: str) -> Identity:
    """The folder at ``root`` (a link to one followed): its device and inode; None when nothing, or no
    folder, is there (renamed away, deleted, unmounted) or it cannot be looked at."""
    try:
        seen = os.stat(root)
    except OSError:
        return None
    return (seen.st_dev, seen.st_ino) if stat.S_ISDIR(seen.st_mode) else None


class ShownLink(TypedDict):
    """A linked folder as the service shows it (``/control/links``, ``/api/links``, ``desktop status``):
    its ``LinkState`` and, from its last pass (``last``, the pass's summary), what is to be told."""

    dir: str
    kb_id: str
    state: str
    last_pass_at: float | None
    last: dict[str, Any] | None
    error: str | None
    paused: str | None
    watching: bool
    failed: list[dict[str, Any]]
    failed_count: int
    wait_for_room: int
    deleted_since_confirmation: int
    brought_in: int


class UnreadableLink(TypedDict):
    """What the service shows in place of its linked folders when their records could not be read."""

    dir: None
    kb_id: None
    state: str
    error: str


@dataclass
class LinkState:
    """What ``desktop links`` and the page show of one linked folder."""

    dir: str
    kb_id: str
    state: str = "waiting"  # waiting (a pass is due), syncing, idle, paused, error
    last_pass_at: float | None = None
    last: dict[str, Any] | None = None
    error: str | None = None
    paused: str | None = None
    watching: bool = False

    def shown(self) -> ShownLink:
        """The state, and from the last pass what is to be told: the files whose version failed (the one
        before answers), how many wait for room, and the deletions since the last confirmation."""
        last = self.last or {}
        # ``asdict`` copies ``last``: what is shown does not change with the next pass.
        return cast("ShownLink", {
            **asdict(self),
            "failed": last.get("failed") or [],
            "failed_count": last.get("failed_count") or 0,
            "wait_for_room": last.get("wait_for_room") or 0,
            "deleted_since_confirmation": last.get("deleted_since_confirmation") or 0,
            "brought_in": last.get("brought_in") or 0,
        })


@dataclass
class Link:
    """One linked folder in the service: what is shown of it, when its next pass is due, its threads."""

    status: LinkState
    due: float | None = 0.0  # time.monotonic() when a pass is to run
    asked: frozenset[str] = frozenset()  # the deletions the paused pass would have made
    confirmed: frozenset[str] | None = None  # those the user let through: the next pass may make them
    failures: int = 0  # failed passes in a row
    stop: threading.Event = field(default_factory=threading.Event)
    watcher: threading.Thread | None = None
    worker: threading.Thread | None = None
    started: float | None = None  # time.monotonic() when the pass under way began
    seen: Identity = None  # the folder at its path when last looked at (or its last pass began)
    look_at: float = 0.0  # time.monotonic() when it is next looked at


def limit(seconds: float) -> str:
    return f"{seconds / 60:g} minutes" if seconds >= 60 else f"{seconds:g} seconds"


def overdue(seconds: float) -> str:
    return f"the pass ran past its {limit(seconds)} and was stopped: the next one resumes it"

"""A linked folder watched for changes (``watchfiles``, Rust's ``notify``): each folder that takes part
on its own, never the tree recursively, a missing one looked for again every two seconds, and the watch
started again on the folder at the path when it is not the one watched (docs/sync.md)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

from memmy_kb_client.sync.link_state import folder_identity
from memmy_kb_client.sync.local import folders_to_watch, is_temporary


def watch_folder(
    root: str, stop: threading.Event, changed: Callable[[], None], watching: Callable[[bool], None]
) -> None:
    """Watch ``root`` until ``stop``, calling ``changed`` for each burst of changes and ``watching`` as
    the watch starts and ends; a folder that is missing (unmounted) is looked for again. Each folder that
    takes part is watched on its own (``local.folders_to_watch``), never recursively: a recursive watch
    would follow a link out of the folder. A watch goes on on a folder renamed away: the one at ``root``
    is looked at twice a second, and once it is gone or another the watch ends (the link's worker, which
    looks too, runs the pass) and starts again on what is there."""
    from watchfiles import Change, watch

    def relevant(_: object, path: str) -> bool:
        relative = os.path.relpath(path, root).replace(os.sep, "/")
        return not any(
            part.startswith(".") and part != ".memmyignore" for part in relative.split("/")
        ) and not (is_temporary(relative.rsplit("/", 1)[-1]))

    while not stop.is_set():
        watched = folder_identity(root)
        if watched is None:
            watching(False)
            stop.wait(2.0)
            continue
        try:
            folders = folders_to_watch(Path(root))
            changes = _changes(watch, folders, stop, relevant)
            watching(True)
            try:
                for batch in changes:
                    if not batch:  # no change for half a second: is the folder there still the one watched?
                        if folder_identity(root) != watched:
                            break
                        continue
                    changed()
                    if any(change != Change.modified for change, _ in batch) and (
                        folders_to_watch(Path(root)) != folders
                    ):
                        break  # a folder came or went: watch the new set
            finally:
                changes.close()
        except (OSError, RuntimeError):
            stop.wait(2.0)
        watching(False)


def _changes(
    watch: Any, folders: list[str], stop: threading.Event, relevant: Callable[[object, str], bool]
) -> Generator[set[tuple[Any, str]], None, None]:
    # The debounce groups an editor's save or a copied tree into one batch; ``step`` is how long the
    # watcher waits for more; ``rust_timeout`` bounds how long ``stop`` can go unnoticed, and each one
    # passed without a change yields an empty batch (the folder at the path is looked at then).
    yield from watch(
        *folders,
        recursive=False,
        watch_filter=relevant,
        debounce=800,
        step=100,
        stop_event=stop,
        rust_timeout=500,
        yield_on_timeout=True,
        raise_interrupt=False,
    )

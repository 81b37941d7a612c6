"""Linked folders in the desktop service: each watched, a burst of changes let settle, then the same pass
as ``memmy-kb sync`` on the link's own worker thread, within a deadline; a pass at start catches up, a
failed one is retried, a large deletion pauses the link until confirmed (docs/sync.md)."""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memmy_kb_client.sync.link_state import Link, LinkState, ShownLink, folder_identity, limit, overdue
from memmy_kb_client.sync.local import OWN_STATE, own_state_in
from memmy_kb_client.sync.roots import real_root, root_refused, same_folder
from memmy_kb_client.sync.store import SyncStore
from memmy_kb_client.sync.watch import watch_folder

if TYPE_CHECKING:
    from memmy_kb_client.sync.cloud import CloudClient
    from memmy_kb_client.sync.execute import Sender


# httpx, the SDK and the pass are imported by the first pass: a service with no linked folder never loads
# them (its start and the hooks' recalls stay as light as before).

logger = logging.getLogger("memmy_kb_client.sync")

QUIET_SECONDS: Final = 1.0
RETRY_SECONDS: Final = 30.0
# A pass now and then even without a local change: files deleted or replaced in the KB by other means.
RESCAN_SECONDS: Final = 600.0
# A pass stops at its next step or chunk sent once it has run this long; the next one resumes it (a large
# folder's first sync goes on in passes of this length). One stuck past it holds up its own link only.
PASS_SECONDS: Final = 600.0
# How often a linked folder is looked at: one renamed away, unmounted or put back at its path gets a pass
# this soon, without waiting for a file event (a watch may go on on a folder renamed away, or end silently).
LOOK_SECONDS: Final = 2.0


class LinkError(Exception):
    """A link refused (not a folder, already linked, a KB shared with you); the message says why."""


class Links:
    """The service's linked folders and the threads that keep them in sync: for each, a watcher and a
    worker of its own, so that no folder's pass (a slow disk, a stalled upload) holds up another's."""

    def __init__(
        self,
        store: SyncStore,
        lock_dir: Path,
        client: Callable[[], CloudClient],
        *,
        quiet_seconds: float = QUIET_SECONDS,
        retry_seconds: float = RETRY_SECONDS,
        rescan_seconds: float = RESCAN_SECONDS,
        pass_seconds: float = PASS_SECONDS,
        look_seconds: float = LOOK_SECONDS,
        watch: bool = True,
        send: Sender | None = None,
    ) -> None:
        self.store, self.lock_dir, self._client = store, lock_dir, client
        self.quiet, self.retry, self.rescan, self.watch = quiet_seconds, retry_seconds, rescan_seconds, watch
        self.pass_seconds, self.look = pass_seconds, look_seconds
        self._send = send  # tests: storage stands in
        self._links: dict[str, Link] = {}
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._started = False

    # ------------------------------------------------------------------------------------ lifecycle

    def start(self) -> Links:
        with self._lock:
            self._started = True
            for link in self._links.values():
                self._start_worker(link)
        for root, kb_id in self.store.links():
            self._add(root, kb_id)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop every link's threads, waiting ``timeout`` seconds in all (a pass stuck in a call that no
        stop reaches is left to end on its own: its thread is a daemon's)."""
        self._stopping.set()
        with self._lock:
            links = list(self._links.values())
            self._lock.notify_all()
        for link in links:
            link.stop.set()
        deadline = time.monotonic() + timeout
        for thread in [thread for link in links for thread in (link.worker, link.watcher)]:
            if thread is not None:
                thread.join(max(0.0, deadline - time.monotonic()))

    # ------------------------------------------------------------------------------ what routes call

    def link(self, directory: str, kb_id: str) -> ShownLink:
        """Link the folder (known by its real path: an alias of a linked folder is that link) to ``kb_id``;
        LinkError with the sentence why not."""
        root = str(real_root(directory))
        if not os.path.isdir(root):
            raise LinkError(f"{root} is not a folder")
        if own_state_in(Path(root)) == "":
            raise LinkError(OWN_STATE)
        refused = root_refused(Path(root))
        if refused is not None:
            raise LinkError(refused)
        root = self._refuse_another_kb(root, kb_id)
        client = self._client()
        try:
            if client.get_knowledge_base(kb_id).get("role") != "owner":
                raise LinkError(
                    "a knowledge base shared with you cannot be a sync target: link one of your own"
                )
        finally:
            client.close()
        with self._lock:  # again: a link of this folder to another KB may have come while the cloud answered
            root = self._refuse_another_kb(root, kb_id)
            self.store.add_link(root, kb_id)
            return self._add(root, kb_id).shown()

    def _refuse_another_kb(self, root: str, kb_id: str) -> str:
        """The path the folder ``root`` is linked by (its link's, reached by any path; else ``root``);
        LinkError when that link is to another KB."""
        with self._lock:
            for linked, existing in self._links.items():
                if linked == root or same_folder(linked, root):
                    if existing.status.kb_id != kb_id:
                        raise LinkError(f"{linked} is linked to {existing.status.kb_id} already: unlink it first")
                    return linked
            return root

    def linked_as(self, directory: str) -> str:
        """The path ``directory``'s folder is linked by (reached by any path), else its absolute path."""
        root = os.path.abspath(os.path.expanduser(directory))
        with self._lock:
            return next((li for li in self._links if li == root or same_folder(li, root)), root)

    def unlink(self, directory: str) -> bool:
        root = self.linked_as(directory)
        with self._lock:
            link = self._links.pop(root, None)
            self._lock.notify_all()
        self.store.remove_link(root)
        if link is None:
            return False
        link.stop.set()  # its pass stops at its next step or chunk sent, its worker and watcher end
        return True

    def confirm(self, directory: str) -> bool:
        """Run the paused link's pass, deletions and all."""
        root = self.linked_as(directory)
        with self._lock:
            link = self._links.get(root)
            if link is None:
                return False
            link.confirmed, link.due = link.asked, 0.0
            link.status.state = "waiting"
            self._lock.notify_all()
        return True

    def shown(self) -> list[ShownLink]:
        with self._lock:
            return [self._shown(link) for link in sorted(self._links.values(), key=lambda li: li.status.dir)]

    def _shown(self, link: Link) -> ShownLink:
        shown = link.status.shown()
        if link.started is not None and time.monotonic() - link.started > self.pass_seconds:
            shown["state"] = "error"
            shown["error"] = (
                f"the pass has run past its {limit(self.pass_seconds)}, held up in a call (a disk or "
                "the network not answering): it stops at its next step; other folders go on"
            )
        return shown

    def changed(self, root: str) -> None:
        """Something changed in ``root``: a pass once the changes have settled for ``quiet`` seconds."""
        with self._lock:
            link = self._links.get(root)
            if link is None:
                return
            link.due = time.monotonic() + self.quiet
            if link.status.state in ("idle", "error"):
                link.status.state = "waiting"
            self._lock.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Tests: whether every link has no pass due or running within ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while any(
                li.due is not None and li.status.state != "paused" for li in self._links.values()
            ) or any(li.status.state == "syncing" for li in self._links.values()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(min(left, 0.1))
        return True

    # -------------------------------------------------------------------------------------- threads

    def _add(self, root: str, kb_id: str) -> LinkState:
        with self._lock:
            link = self._links.get(root)
            if link is None:
                link = Link(LinkState(root, kb_id), seen=folder_identity(root))
                self._links[root] = link
                if self.watch:
                    link.watcher = threading.Thread(
                        target=watch_folder,
                        args=(
                            root,
                            link.stop,
                            lambda: self.changed(root),
                            functools.partial(self._set_watching, link),
                        ),
                        name="memmy-kb-watch",
                        daemon=True,
                    )
                    link.watcher.start()
                if self._started:
                    self._start_worker(link)
            link.due = 0.0
            self._lock.notify_all()
            return link.status

    def _start_worker(self, link: Link) -> None:
        link.worker = threading.Thread(target=self._work, args=(link,), name="memmy-kb-sync", daemon=True)
        link.worker.start()

    def _work(self, link: Link) -> None:
        """One link's passes, each when due, until it is unlinked or the service stops."""
        root = link.status.dir
        while not (self._stopping.is_set() or link.stop.is_set()):
            self._look(link)
            if not self._take_due(link):
                continue
            try:
                self._pass(root)
            except Exception as err:  # the link's worker must outlive a bug in one pass
                logger.exception("a linked folder's pass failed unexpectedly")
                self._failed_unexpectedly(root, err)

    def _take_due(self, link: Link) -> bool:
        """Whether ``link``'s pass is due (then marked as running), after waiting a second at most."""
        with self._lock:
            now = time.monotonic()
            if link.due is not None and link.due <= now:
                link.due, link.status.state = None, "syncing"
                return True
            if (
                link.due is None
                and link.status.last_pass_at
                and time.time() - link.status.last_pass_at > self.rescan
            ):
                link.due = 0.0
                return False
            wait = link.due - now if link.due is not None else self.rescan
            self._lock.wait(max(0.01, min(wait, 1.0, self.look)))
            return False

    def _look(self, link: Link) -> None:
        """A pass at once when the folder at the link's path is not the one last seen: gone (renamed,
        deleted, unmounted: the pass pauses), back, or another one in its place (the pass decides)."""
        if time.monotonic() < link.look_at:
            return
        link.look_at = time.monotonic() + self.look
        seen = folder_identity(link.status.dir)  # outside the lock: a disk that hangs holds up this link only
        with self._lock:
            if seen == link.seen:
                return
            link.seen, link.due = seen, 0.0
            if link.status.state in ("idle", "error"):
                link.status.state = "waiting"
            self._lock.notify_all()

    def _pass(self, root: str) -> None:
        import httpx

        from memmy_kb_client.sdk import MemmyApiError
        from memmy_kb_client.sync.execute import SyncAborted
        from memmy_kb_client.sync.run import run_pass

        seen = folder_identity(root)
        with self._lock:
            link = self._links.get(root)
            if link is None:
                return
            kb_id, confirmed = link.status.kb_id, link.confirmed
            link.started = started = time.monotonic()
            link.seen = seen  # what this pass sees: a change after it gets the next
        update: dict[str, Any] = {"error": None, "paused": None, "state": "idle"}
        retry, asked = False, frozenset[str]()
        client = None
        try:
            client = self._client()
            result = run_pass(
                client,
                self.store,
                kb_id,
                Path(root),
                lock_dir=self.lock_dir,
                ask=None if confirmed is None else lambda plan: {s.path for s in plan.deletes} <= confirmed,
                send=self._send,
                # Unlinked meanwhile, the pass stops too: what the user unlinks is sent no further; and
                # one past its deadline, resumed by the next (the file being sent is sent again).
                stopping=lambda: (
                    self._stopping.is_set()
                    or link.stop.is_set()
                    or time.monotonic() - started > self.pass_seconds
                ),
            )
            update["last"], update["last_pass_at"] = result.record(), time.time()
            errors = result.outcome.errors if result.outcome else []
            if result.stopped:
                update.update(state="paused", paused=result.stopped)
                asked = frozenset(s.path for s in result.plan.deletes)
            elif errors:
                update.update(state="error", error=f"{errors[0]['path']}: {errors[0]['error']}")
                retry = True
        except (SyncAborted, MemmyApiError, httpx.HTTPError, OSError, sqlite3.Error) as err:
            late = isinstance(err, SyncAborted) and time.monotonic() - started > self.pass_seconds
            if self._stopping.is_set() or link.stop.is_set():  # the service stopping, or an unlink: normal
                logger.info("a linked folder's pass stopped before it was done: the next one resumes it")
            else:
                logger.warning("sync of a linked folder failed: %s", type(err).__name__)
            update.update(state="error", error=overdue(self.pass_seconds) if late else str(err))
            retry = True
        finally:
            if client is not None:
                client.close()
        with self._lock:
            link.started = None
            if self._links.get(root) is not link:
                return  # unlinked meanwhile
            link.asked = asked
            if link.confirmed is confirmed and not retry:  # used (a confirmation meanwhile is the next's)
                link.confirmed = None
            for key, value in update.items():
                setattr(link.status, key, value)
            link.failures = link.failures + 1 if retry else 0
            if retry and link.due is None:
                link.due = time.monotonic() + self._retry_after(link)
            if link.due is not None:
                link.status.state = "waiting" if update["state"] == "idle" else link.status.state
            self._lock.notify_all()

    def _retry_after(self, link: Link) -> float:
        """Seconds to the next try of a link that failed ``link.failures`` times in a row."""
        return float(min(self.retry * 2 ** min(link.failures - 1, 16), max(self.rescan, self.retry)))

    def _failed_unexpectedly(self, root: str, err: Exception) -> None:
        with self._lock:
            link = self._links.get(root)
            if link is not None:
                link.status.state, link.status.error = "error", f"unexpected {type(err).__name__}"
                link.failures += 1
                link.due = time.monotonic() + self._retry_after(link)
                self._lock.notify_all()

    def _set_watching(self, link: Link, watching: bool) -> None:
        with self._lock:
            link.status.watching = watching


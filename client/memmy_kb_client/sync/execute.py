"""Carrying out a plan: each upload and replace recorded before it is asked for, so a pass killed at any
point is resumed by the next without uploading twice; a version conflict read again (docs/sync.md)."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

import httpx

from memmy_kb_client.replies import File, UploadTicket, unchanged
from memmy_kb_client.sdk import MemmyApiError
from memmy_kb_client.storage_post import OpenFile, post_upload_from
from memmy_kb_client.sync.cloud import Cloud
from memmy_kb_client.sync.names import kb_path
from memmy_kb_client.sync.plan import Plan, Step
from memmy_kb_client.sync.remote import SYNC_ORIGIN, Tree
from memmy_kb_client.sync.source import Cancelled, NotAsHashed, StoppableReader, opened_as_hashed
from memmy_kb_client.sync.store import Failed, Pending, Synced, SyncStore

# A replace re-read and tried again at most this many times when other desktops keep replacing first.
MAX_REPLACE_ATTEMPTS: Final = 3
# Refusals that will not change until the file does: remembered with its hash, not retried until then;
# but a KB without room for it (413 too) is the KB's state, which deleting other files changes.
_LASTING: Final = frozenset({415, 413, 422})
_NO_ROOM: Final = frozenset({"kb_storage_limit_reached", "kb_file_limit_reached"})

Progress = Callable[[int, int, str, str], None]
# Sends a ticket's bytes from a file the pass opened and checked (never a path: nothing is opened again).
Sender = Callable[[UploadTicket, OpenFile], None]


class SyncAborted(Exception):
    """The pass cannot go on (the login refused, the KB gone or not the caller's)."""


@dataclass
class Outcome:
    """What a pass did: one line per change, one per error, and the uploads sent (for ``--wait``)."""

    done: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    sent: dict[str, str] = field(default_factory=dict)  # upload id -> path
    # The KB's first refusal for want of room (its code), and the files not asked for after it.
    no_room: str | None = None
    held: list[str] = field(default_factory=list)


@dataclass
class Executor:
    client: Cloud
    store: SyncStore
    pair: str
    kb_id: str
    root: Path
    progress: Progress | None = None
    send: Sender = lambda ticket, handle: post_upload_from(ticket, handle)
    # Asked between steps: the service is stopping (what is left, the next start's pass resumes).
    stopping: Callable[[], bool] = lambda: False
    # Off in a confirmed pass: its deletions were shown and let through, the count starts over after them.
    count_deletions: bool = True
    outcome: Outcome = field(default_factory=Outcome)

    def run(self, plan: Plan, tree: Tree) -> Outcome:
        for step in plan.records:
            self._remember(step)
        folders = self._make_folders(plan.folders, dict(tree.folders))
        work = [*plan.resumes, *plan.uploads, *plan.replaces, *plan.deletes]
        for index, step in enumerate(work, start=1):
            if self.stopping():
                raise SyncAborted("stopped before the pass was done: the next one resumes it")
            if self.progress is not None:
                self.progress(index, len(work), step.kind, step.path)
            if self._no_room_for(step):
                self.outcome.held.append(step.path)
                continue
            try:
                self._do(step, folders)
            except (MemmyApiError, httpx.HTTPError, OSError) as err:
                if isinstance(err, MemmyApiError) and err.status in (401, 403):
                    raise SyncAborted(f"{err.message} ({err.status} {err.code})") from err
                self._failed(step, err)
        return self.outcome

    def _do(self, step: Step, folders: dict[str, str]) -> None:
        if step.kind == "delete":
            self._delete(step)
        elif step.kind == "replace":
            self._replace(step, step.version)
            if step.resend:  # once: if the engine fails these bytes again, they are shown as failed
                self.store.resending(self.pair, step.path, step.sha256 or "")
        elif step.kind == "upload":
            pending = Pending(
                "upload", str(uuid.uuid4()), step.sha256 or "", step.size, started_at=time.time()
            )
            self.store.intend(self.pair, step.path, pending)
            self._upload(step.path, pending, folders)
            if step.upload_id:  # the earlier, rejected upload of this file: off the listing
                self._dismiss(step.upload_id)
        elif step.kind == "resume" and step.pending is not None:
            if step.pending.kind == "upload":
                self._upload(step.path, step.pending, folders)
            else:
                self._send_replace(step.path, step.pending)

    # --------------------------------------------------------------------------------------- steps

    def _remember(self, step: Step) -> None:
        if step.kind == "record":
            self.store.synced(
                self.pair, step.path, Synced(step.file_id or "", step.version or 0, step.sha256 or "")
            )
        elif step.kind == "fail":
            self.store.failed(self.pair, step.path, Failed(step.sha256 or "", step.reason, step.upload_id))
            self.outcome.errors.append({"path": step.path, "error": f"rejected: {step.reason}"})
        elif step.kind == "forget":
            self.store.forget(self.pair, step.path)
        elif step.kind == "drop":
            self.store.drop_pending(self.pair, step.path)

    def _make_folders(self, needed: list[str], folders: dict[str, str]) -> dict[str, str]:
        for path in needed:
            parent, _, name = path.rpartition("/")
            if parent and parent not in folders:
                continue  # its parent could not be made: its files say so
            try:
                made = self.client.create_folder(self.kb_id, name, folders[parent] if parent else None)
            except MemmyApiError as err:
                if err.status in (401, 403):
                    raise SyncAborted(f"{err.message} ({err.status} {err.code})") from err
                self.outcome.errors.append({"path": path + "/", "error": f"folder not made: {err.message}"})
                continue
            folders[path] = str(made["id"])
            self.outcome.done.append({"action": "folder", "path": path + "/"})
        return folders

    def _upload(self, path: str, pending: Pending, folders: dict[str, str]) -> None:
        name = kb_path(path) or path
        folder, _, filename = name.rpartition("/")
        if folder and folder not in folders:
            raise MemmyApiError(404, "folder_not_made", f"the folder {folder} could not be made")
        ticket = self.client.request_upload(
            self.kb_id,
            filename,
            pending.size,
            folder_id=folders[folder] if folder else None,
            idempotency_key=pending.key,
            sha256=pending.sha256,
            origin=SYNC_ORIGIN,
        )
        self._post(path, ticket, pending)
        self.outcome.done.append({"action": "uploaded", "path": path, "upload_id": ticket["upload_id"]})

    def _replace(self, step: Step, version: int | None) -> None:
        for _ in range(MAX_REPLACE_ATTEMPTS):
            pending = Pending(
                "replace",
                str(uuid.uuid4()),
                step.sha256 or "",
                step.size,
                file_id=step.file_id,
                if_version=version,
                started_at=time.time(),
            )
            self.store.intend(self.pair, step.path, pending)
            try:
                self._send_replace(step.path, pending)
                return
            except MemmyApiError as err:
                if err.code != "version_conflict":
                    raise
            current = self.client.get_file(self.kb_id, step.file_id or "")  # another desktop was first
            if current.get("sha256") == step.sha256:
                self.store.synced(
                    self.pair,
                    step.path,
                    Synced(str(current["id"]), _version(current), step.sha256 or ""),
                )
                self.outcome.done.append(
                    {"action": "unchanged", "path": step.path, "version": current["version"]}
                )
                return
            version = _version(current)
        raise MemmyApiError(409, "version_conflict", "the file kept being replaced by others: next pass")

    def _send_replace(self, path: str, pending: Pending) -> None:
        answer = self.client.request_replacement(
            self.kb_id,
            pending.file_id or "",
            pending.size,
            sha256=pending.sha256,
            if_version=pending.if_version,
            idempotency_key=pending.key,
        )
        if unchanged(answer):
            self.store.synced(
                self.pair, path, Synced(pending.file_id or "", int(answer["version"]), pending.sha256)
            )
            self.outcome.done.append({"action": "unchanged", "path": path, "version": answer["version"]})
            return
        self._post(path, answer, pending)
        self.outcome.done.append(
            {
                "action": "replaced",
                "path": path,
                "upload_id": answer["upload_id"],
                "version": answer["replaces_version"],
            }
        )

    def _post(self, path: str, ticket: UploadTicket, pending: Pending) -> None:
        """The ticket's upload id recorded, then the bytes sent, then that they went. The bytes are read
        from one descriptor opened beneath the folder and found to be those hashed (``source``): a file
        swapped or changed since is skipped (an OSError: the next pass), nothing of it sent."""
        self.store.issued(self.pair, path, str(ticket["upload_id"]))
        try:
            opened = opened_as_hashed(self.root, path, pending.sha256, pending.size)
            with opened as handle:
                reader: OpenFile = StoppableReader(handle, self.stopping)
                try:
                    self.send(ticket, reader)
                except Cancelled as err:
                    raise SyncAborted(str(err)) from err
        except NotAsHashed:
            if "replaces_version" in ticket:  # a replace not sent on, dismissed, frees its file at once
                with contextlib.suppress(MemmyApiError, httpx.HTTPError):
                    self.client.dismiss_upload(self.kb_id, str(ticket["upload_id"]))
            raise
        self.store.posted(self.pair, path)
        self.outcome.sent[str(ticket["upload_id"])] = path

    def _delete(self, step: Step) -> None:
        try:
            self.client.delete_file(self.kb_id, step.file_id or "")
        except MemmyApiError as err:
            if err.status != 404:
                raise
        self.store.forget(self.pair, step.path)
        if self.count_deletions:
            self.store.deleted(self.pair)
        self.outcome.done.append({"action": "deleted", "path": step.path})

    def _no_room_for(self, step: Step) -> bool:
        """After the KB's first refusal for want of room, the uploads (and, storage full, the replaces)
        left in the pass are not asked for: each would be refused the same."""
        if self.outcome.no_room is None or step.kind not in ("upload", "replace"):
            return False
        return step.kind == "upload" or self.outcome.no_room == "kb_storage_limit_reached"

    def _dismiss(self, upload_id: str) -> None:
        with contextlib.suppress(MemmyApiError):  # already gone, or no longer failed: nothing to clear
            self.client.dismiss_upload(self.kb_id, upload_id)

    def _failed(self, step: Step, err: Exception) -> None:
        """One file's error: a lasting refusal is remembered with the file's hash; anything else leaves
        the intent (if any) for the next pass to resume or drop."""
        message = f"{err.message} ({err.status} {err.code})" if isinstance(err, MemmyApiError) else str(err)
        if isinstance(err, MemmyApiError) and step.kind != "delete":
            if err.code in _NO_ROOM and self.outcome.no_room is None:
                self.outcome.no_room = err.code
            if err.status in _LASTING and err.code not in _NO_ROOM:
                self.store.failed(self.pair, step.path, Failed(step.sha256 or "", err.message))
            elif err.status < 500 and err.code != "storage_rejected_upload":
                self.store.drop_pending(self.pair, step.path)
        self.outcome.errors.append({"path": step.path, "error": message})


def _version(file: File) -> int:
    """The version of a file read again (one with none is an upload, never a file a replace was asked of)."""
    return int(cast(int, file["version"]))

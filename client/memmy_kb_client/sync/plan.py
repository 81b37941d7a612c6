"""What one pass does, a pure function of the folder, the KB and what the sync remembers: upload,
replace, delete, skip, adopt or resume each file, and whether the deletions wait for ``--yes``
(docs/sync.md)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from memmy_kb_client.sync.guard import held_for_room, why_confirm
from memmy_kb_client.sync.local import FolderScan
from memmy_kb_client.sync.names import kb_path, name_refused, twin_names
from memmy_kb_client.sync.remote import Entry, Tree
from memmy_kb_client.sync.store import Failed, Memory, Pending, Synced

DEFAULT_DELETE_SHARE: Final = 0.25
# An upload whose bytes were sent but that a listing shows neither in flight nor as a file is waited for
# this long before it is decided afresh: a listing can read the KB midway through the cloud recording the
# upload as its file (docs/sync.md, "Interrupted passes resume without uploading twice").
UNSEEN_GRACE_SECONDS: Final = 600.0

StepKind = Literal[
    "upload", "replace", "delete", "skip", "resume", "wait", "record", "fail", "forget", "drop", "failed"
]


@dataclass(frozen=True)
class Step:
    """One thing a pass does about one path (``record``, ``fail``, ``forget`` and ``drop`` only change
    what the sync remembers; ``wait`` does nothing: an upload of it is in flight)."""

    kind: StepKind
    path: str
    reason: str = ""
    file_id: str | None = None
    version: int | None = None
    sha256: str | None = None
    size: int = 0
    pending: Pending | None = None
    upload_id: str | None = None  # record/fail: the upload concerned; upload: a failed one to dismiss
    resend: bool = False  # replace: the same bytes again, once, after the knowledge engine failed them


@dataclass(frozen=True)
class Plan:
    uploads: list[Step] = field(default_factory=list)
    replaces: list[Step] = field(default_factory=list)
    deletes: list[Step] = field(default_factory=list)
    skips: list[Step] = field(default_factory=list)
    resumes: list[Step] = field(default_factory=list)
    waiting: list[Step] = field(default_factory=list)
    records: list[Step] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    synced_count: int = 0
    confirm: str | None = None
    # Files whose current version the knowledge engine failed, sent again once already: the previous
    # version answers (``failed``); uploads and replaces not asked for while the KB has no room (``held``).
    failed: list[Step] = field(default_factory=list)
    held: list[Step] = field(default_factory=list)
    deleted_before: int = 0  # files deleted by this folder's sync since the last confirmation

    @property
    def changes(self) -> int:
        return len(self.uploads) + len(self.replaces) + len(self.deletes) + len(self.resumes)

    def summary(self) -> dict[str, Any]:
        """The plan as ``--dry-run --json`` prints it."""

        def named(steps: list[Step]) -> list[dict[str, Any]]:
            return [{"path": s.path, **({"reason": s.reason} if s.reason else {})} for s in steps]

        return {
            "upload": named(self.uploads),
            "replace": named(self.replaces),
            "delete": named(self.deletes),
            "skip": named(self.skips),
            "resume": named(self.resumes),
            "in_flight": named(self.waiting),
            "folders": list(self.folders),
            "synced": self.synced_count,
            "confirm": self.confirm,
            "failed": named(self.failed),
            "wait_for_room": named(self.held),
            "deleted_since_confirmation": self.deleted_before,
        }


@dataclass
class _Work:
    """The plan being built, and the sync's memory as the pending outcomes change it."""

    synced: dict[str, Synced]
    failed: dict[str, Failed]
    memory: Memory
    now: float = 0.0
    busy: set[str] = field(default_factory=set)
    steps: dict[str, list[Step]] = field(default_factory=dict)
    twins: dict[str, str] = field(default_factory=dict)  # a path the KB names as another's: that other

    def add(self, step: Step) -> None:
        self.steps.setdefault(step.kind, []).append(step)


def plan_pass(
    scan: FolderScan,
    sha256: dict[str, str],
    tree: Tree,
    memory: Memory,
    *,
    delete_share: float = DEFAULT_DELETE_SHARE,
    now: float | None = None,
) -> Plan:
    """The pass that makes ``tree`` match ``scan`` (see the module's docstring); ``now`` is the clock's
    time (``time.time()`` by default)."""
    work = _Work(dict(memory.synced), dict(memory.failed), memory, time.time() if now is None else now)
    work.twins = twin_names(scan.files)
    by_id, by_upload, at_path = tree.by_id(), tree.by_upload(), tree.at_path()
    for path, pending in sorted(memory.pending.items()):
        _settle_pending(work, path, pending, by_id, by_upload, sha256.get(path))
    for path, seen in sorted(scan.files.items()):
        if path in work.busy:
            continue
        if path not in sha256:
            work.add(Step("skip", path, "changing while read: next pass"))
            continue
        _decide_file(work, path, sha256[path], seen.size, by_id, at_path)
    for path, reason in sorted({**scan.skipped, **scan.unreadable}.items()):
        work.add(Step("skip", path or ".", reason))
    present = set(scan.files) | set(scan.skipped)
    for path, synced in sorted(work.synced.items()):
        if path in present or path in work.busy or scan.unread(path):
            continue
        entry = by_id.get(synced.file_id)
        if entry is None:
            work.add(Step("forget", path, "no longer in the knowledge base"))
        else:
            work.add(Step("delete", path, file_id=entry.id))
    return _finish(work, scan, tree, by_id, delete_share)


def _finish(work: _Work, scan: FolderScan, tree: Tree, by_id: dict[str, Entry], share: float) -> Plan:
    steps = work.steps
    uploads, replaces, held = held_for_room(work.memory.no_room, steps.get("upload", []), steps.get("replace", []))
    deletes = steps.get("delete", [])
    synced_count = sum(1 for s in work.synced.values() if s.file_id in by_id)
    before = work.memory.deleted
    confirm = why_confirm(scan, len(deletes), synced_count, before, share)
    return Plan(
        uploads=uploads,
        replaces=replaces,
        deletes=deletes,
        skips=steps.get("skip", []),
        resumes=steps.get("resume", []),
        waiting=steps.get("wait", []),
        records=[s for kind in ("record", "fail", "forget", "drop") for s in steps.get(kind, [])],
        folders=_folders_to_make([*uploads, *steps.get("resume", [])], tree),
        synced_count=synced_count,
        confirm=confirm,
        failed=steps.get("failed", []),
        held=held,
        deleted_before=before,
    )


def _folders_to_make(steps: list[Step], tree: Tree) -> list[str]:
    needed: set[str] = set()
    for step in steps:
        parts = (kb_path(step.path) or "").split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth])
            if folder not in tree.folders:
                needed.add(folder)
    return sorted(needed, key=lambda f: (f.count("/"), f))


def _decide_file(
    work: _Work, path: str, sha: str, size: int, by_id: dict[str, Entry], at_path: dict[str, list[Entry]]
) -> None:
    twin = work.twins.get(path)
    if twin is not None:
        work.add(Step("skip", path, f"the knowledge base would name it as {twin!r}, which is synced instead"))
        return
    synced = work.synced.get(path)
    entry = by_id.get(synced.file_id) if synced else None
    if synced is not None and entry is None:
        work.add(Step("forget", path, "deleted from the knowledge base: uploaded again"))
        del work.synced[path]
    if entry is None:
        refused = name_refused(path)
        if refused is not None:
            work.add(Step("skip", path, refused))
            return
        here = at_path.get(kb_path(path) or path, [])
        entry = next((e for e in here if e.is_file and e.synced), None)
        if entry is None:
            _new_file(work, path, sha, size, here)
            return
    _known_file(work, path, sha, size, entry)


def _new_file(work: _Work, path: str, sha: str, size: int, here: list[Entry]) -> None:
    failed = work.failed.get(path)
    if any(e.is_file for e in here):
        work.add(Step("skip", path, "a file of this name, not uploaded by a sync, is in the knowledge base"))
    elif any(e.status == "uploading" for e in here):
        work.add(Step("skip", path, "a file of this name is being uploaded by other means: next pass"))
    elif failed is not None and failed.sha256 == sha:
        work.add(Step("skip", path, f"rejected before, unchanged since: {failed.reason}"))
    else:
        work.add(Step("upload", path, sha256=sha, size=size, upload_id=failed.upload_id if failed else None))


def _known_file(work: _Work, path: str, sha: str, size: int, entry: Entry) -> None:
    """A KB file this folder's sync brought in, or a synced one at its path (adopted)."""
    failed = work.failed.get(path)
    if entry.sha256 == sha and entry.status == "failed" and _version_failed(work, path, sha, size, entry):
        return
    if entry.sha256 == sha:
        synced = work.synced.get(path)
        if synced != Synced(entry.id, entry.version or 0, sha):
            work.add(Step("record", path, file_id=entry.id, version=entry.version, sha256=sha))
            work.synced[path] = Synced(entry.id, entry.version or 0, sha)
    elif entry.replacement_field("status") == "uploading":
        work.add(Step("skip", path, "being replaced by other means: next pass"))
    elif failed is not None and failed.sha256 == sha:
        work.add(Step("skip", path, f"rejected before, unchanged since: {failed.reason}"))
    else:
        if path not in work.synced:  # adopted: the replace below makes it this folder's
            work.synced[path] = Synced(entry.id, entry.version or 0, entry.sha256 or "")
        work.add(Step("replace", path, file_id=entry.id, version=entry.version, sha256=sha, size=size))


def _version_failed(work: _Work, path: str, sha: str, size: int, entry: Entry) -> bool:
    """The file's current version holds these bytes but the knowledge engine failed it (the version before
    answers recall, if any): sent again once; once sent again, shown as failed until the bytes change.
    True when a step was added (False: still being replaced by other means, decided as usual)."""
    if entry.replacement_field("status") == "uploading":
        return False
    why = entry.reason or "the knowledge engine could not process it"
    if work.memory.resent.get(path) == sha:
        work.add(Step("failed", path, why, file_id=entry.id, version=entry.version))
        seen = Synced(entry.id, entry.version or 0, sha)
        if work.synced.get(path) != seen:
            work.add(Step("record", path, file_id=entry.id, version=entry.version, sha256=sha))
            work.synced[path] = seen
        return True
    if path not in work.synced:  # adopted: the replace below makes it this folder's
        work.synced[path] = Synced(entry.id, entry.version or 0, sha)
    work.add(
        Step(
            "replace",
            path,
            f"sent again once: {why}",
            file_id=entry.id,
            version=entry.version,
            sha256=sha,
            size=size,
            resend=True,
        )
    )
    return True


def _settle_pending(
    work: _Work,
    path: str,
    pending: Pending,
    by_id: dict[str, Entry],
    by_upload: dict[str, Entry],
    local_sha: str | None,
) -> None:
    """What became of an upload or replace recorded before the last pass ended."""
    if pending.kind == "upload":
        found = by_upload.get(pending.upload_id) if pending.upload_id else None
        if found is not None and found.is_file:
            _done(work, path, found, pending)
            return
        shown_status = found.status if found else None
        failure = found.reason if found and found.status == "failed" else None
    else:
        file = by_id.get(pending.file_id or "")
        if file is None:
            work.add(Step("forget", path, "deleted from the knowledge base during its replace"))
            work.synced.pop(path, None)
            return
        if pending.upload_id is not None and file.upload_id == pending.upload_id:
            _done(work, path, file, pending)
            return
        ours = pending.upload_id is not None and file.replacement_field("upload_id") == pending.upload_id
        shown_status = file.replacement_field("status") if ours else None
        failure = (file.replacement_field("reason") or "rejected") if ours and shown_status == "failed" else None
    if failure is not None:
        work.add(Step("fail", path, failure, sha256=pending.sha256, upload_id=pending.upload_id))
        work.failed[path] = Failed(pending.sha256, failure, pending.upload_id)
    elif shown_status == "uploading" and pending.posted:
        work.add(Step("wait", path, "sent; being checked"))
        work.busy.add(path)
    elif _unseen_after_sending(pending, shown_status, work.now):
        work.add(Step("wait", path, "sent; not listed yet"))
        work.busy.add(path)
    elif (shown_status == "uploading" or pending.upload_id is None) and local_sha == pending.sha256:
        work.add(
            Step(
                "resume",
                path,
                pending=pending,
                sha256=pending.sha256,
                size=pending.size,
                file_id=pending.file_id,
                version=pending.if_version,
            )
        )
        work.busy.add(path)
    else:  # expired unused, or the file changed since: decided afresh
        work.add(Step("drop", path, "never completed"))


def _unseen_after_sending(pending: Pending, shown_status: str | None, now: float) -> bool:
    """An upload whose bytes went, listed neither in flight nor as a file, lately: a listing read while the
    cloud made it a file, not a ticket expired unused (uploaded again, it would be a second file)."""
    return (
        pending.kind == "upload"
        and pending.posted
        and shown_status is None
        and now - pending.started_at < UNSEEN_GRACE_SECONDS
    )


def _done(work: _Work, path: str, entry: Entry, pending: Pending) -> None:
    synced = Synced(entry.id, entry.version or 0, entry.sha256 or pending.sha256)
    work.add(
        Step(
            "record",
            path,
            file_id=synced.file_id,
            version=synced.version,
            sha256=synced.sha256,
            upload_id=pending.upload_id,
        )
    )
    work.synced[path] = synced
    work.failed.pop(path, None)

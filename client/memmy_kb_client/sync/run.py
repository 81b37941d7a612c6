"""One pass, end to end: the folder read, the KB read, the plan, and (unless it is a dry run or needs a
confirmation it did not get) its execution; under the folder's pass lock, so two never overlap."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memmy_kb_client.replies import KnowledgeBase
from memmy_kb_client.sync.cloud import Cloud, SyncCloud
from memmy_kb_client.sync.execute import Executor, Outcome, Progress, Sender, SyncAborted
from memmy_kb_client.sync.local import OWN_STATE, hash_files, own_state_in, scan_folder
from memmy_kb_client.sync.pass_lock import pass_lock
from memmy_kb_client.sync.plan import DEFAULT_DELETE_SHARE, Plan, plan_pass
from memmy_kb_client.sync.remote import Entry, read_tree
from memmy_kb_client.sync.roots import real_root, root_refused, too_many_to_send
from memmy_kb_client.sync.store import STORE_FILE, Memory, NoRoom, SyncStore, pair_of


def store_dir(env: Any = os.environ) -> Path:
    """Where sync records live: ``sync/`` in the desktop's private directory (``desktop-private``), never
    in ``desktop/``, which the hooks' sandboxed agents may write: a link added there would have the
    service upload a folder of the agent's choosing."""
    from memmy_kb_client.home.paths import desktop_dir, private_dir

    return Path(private_dir(desktop_dir(env))) / "sync"


def open_store(directory: Path | None = None) -> SyncStore:
    from memmy_kb_client.home.paths import ensure_private_dir

    directory = directory or store_dir()
    ensure_private_dir(str(directory.parent))
    return SyncStore(directory / STORE_FILE)


# The paused plan's deletions named in its record: enough for a person to recognise, few enough to read.
DELETE_NAMES_SHOWN = 5


@dataclass(frozen=True)
class PassResult:
    """A pass: its plan, what it did (None: a dry run, or stopped for ``confirm``) and what it cost."""

    plan: Plan
    outcome: Outcome | None
    stopped: str | None
    listings: int
    hashed: int
    confirmed: bool = False  # run with --yes or a confirmation: the count of deletions started over
    confirm: str | None = None  # what the pass waits (or, a dry run, would wait) to be confirmed for

    def record(self) -> dict[str, Any]:
        """What ``passes`` keeps and ``desktop links`` shows."""
        counts = {
            "upload": len(self.plan.uploads) + len(self.plan.resumes),
            "replace": len(self.plan.replaces),
            "delete": len(self.plan.deletes),
            "skip": len(self.plan.skips),
            "in_flight": len(self.plan.waiting),
        }
        errors = self.outcome.errors if self.outcome else []
        failed = [{"path": s.path, "reason": s.reason} for s in self.plan.failed]
        return {
            "counts": counts,
            "stopped": self.stopped,
            "errors": errors[:20],
            "error_count": len(errors),
            "failed": failed[:20],
            "failed_count": len(failed),
            "wait_for_room": self.waiting_for_room,
            "deleted_since_confirmation": self.deleted_since_confirmation,
            "brought_in": self.plan.synced_count + self.plan.deleted_before,
            # What a confirmation would delete, for the page's question and `desktop links`.
            "delete_first": sorted(s.path for s in self.plan.deletes)[:DELETE_NAMES_SHOWN],
        }

    @property
    def waiting_for_room(self) -> int:
        """The files not sent because the KB has no room: held by the plan, or after the first refusal."""
        return len(self.plan.held) + (len(self.outcome.held) if self.outcome else 0)

    @property
    def deleted_since_confirmation(self) -> int:
        """The running total the guard counts: the files deleted since the last confirmation, these too."""
        if self.confirmed:
            return 0
        deleted = sum(1 for d in self.outcome.done if d["action"] == "deleted") if self.outcome else 0
        return self.plan.deleted_before + deleted


def to_confirm(plan: Plan) -> str | None:
    """What a pass stops for without ``--yes``: its plan's deletions, else sending more files than
    ``MAX_FILES_WITHOUT_YES`` (with the plan's totals)."""
    sending = [*plan.uploads, *plan.replaces]
    return plan.confirm or too_many_to_send(len(sending), sum(step.size for step in sending))


def run_pass(
    client: SyncCloud,
    store: SyncStore,
    kb_id: str,
    root: Path,
    *,
    lock_dir: Path,
    dry_run: bool = False,
    yes: bool = False,
    delete_share: float = DEFAULT_DELETE_SHARE,
    progress: Progress | None = None,
    ask: Callable[[Plan], bool] | None = None,
    send: Sender | None = None,
    stopping: Callable[[], bool] | None = None,
) -> PassResult:
    """One pass making ``kb_id`` match ``root``; a plan that needs confirming runs only with ``yes`` or
    when ``ask(plan)`` says so. ``SyncAborted`` when the KB is not the caller's own, or ``root`` is no folder
    to sync (``roots.root_refused``). The folder is known by its real path: records kept under another
    path of it are taken over (``SyncStore.adopt_aliases``)."""
    root = real_root(root)
    pair = pair_of(kb_id, root)
    if own_state_in(root) == "":
        raise SyncAborted(OWN_STATE)
    refused = root_refused(root)
    if refused is not None:
        raise SyncAborted(refused)
    with pass_lock(lock_dir, pair):
        store.adopt_aliases(kb_id, root)
        kb = client.get_knowledge_base(kb_id)
        if kb.get("role") != "owner":
            raise SyncAborted(
                "a knowledge base shared with you cannot be a sync target: sync into one of your own"
            )
        scan = scan_folder(root)
        memory = store.memory(pair)
        hashed = hash_files(root, scan.files, memory.hashes)
        # A file read again but too fresh to keep: its older row goes too (nothing stale to match later).
        fresh = set(hashed.fresh)
        stale = [p for p in memory.hashes if p not in scan.files or (p in fresh and p not in hashed.keep)]
        store.remember_hashes(pair, hashed.keep, stale)
        tree = read_tree(client, kb_id)
        memory = _room_again(memory, kb)
        plan = plan_pass(scan, hashed.sha256, tree, memory, delete_share=delete_share)
        confirm = to_confirm(plan)
        # Asked once (on a terminal, ``ask`` prompts); a yes to its deletions starts their count over.
        asked_yes = bool(confirm) and not yes and not dry_run and ask is not None and ask(plan)
        stopped = confirm if confirm and not yes and not dry_run and not asked_yes else None
        confirmed = not dry_run and (yes or (bool(plan.confirm) and asked_yes))
        outcome = None
        if not dry_run and stopped is None:
            executor = Executor(client, store, pair, kb_id, root, progress)
            if send is not None:  # tests: storage stands in
                executor.send = send
            if stopping is not None:
                executor.stopping = stopping
            if confirmed:
                store.confirmed(pair)
                executor.count_deletions = False
            outcome = executor.run(plan, tree)
            _remember_room(client, store, pair, kb_id, plan, outcome)
        result = PassResult(
            plan, outcome, stopped, tree.listings, len(hashed.fresh), confirmed=confirmed, confirm=confirm
        )
        if not dry_run:
            store.record_pass(pair, kb_id, str(root), result.record())
        return result


# A KB's limits are not in its record: a pass that found no room tries again once it holds fewer files or
# bytes than then, or after this long (a limit may have been raised).
ROOM_RETRY_SECONDS = 3600.0


def _room_again(memory: Memory, kb: KnowledgeBase) -> Memory:
    """``memory`` without its no-room mark once the KB may have room: it holds fewer files (or bytes) than
    at the refusal, or the mark is old."""
    mark = memory.no_room
    if mark is None:
        return memory
    shrunk = int(kb.get("file_count") or 0) < mark.file_count or int(kb.get("bytes_used") or 0) < mark.bytes_used
    if shrunk or time.time() - mark.at > ROOM_RETRY_SECONDS:
        return replace(memory, no_room=None)
    return memory


def _remember_room(
    client: SyncCloud, store: SyncStore, pair: str, kb_id: str, plan: Plan, outcome: Outcome
) -> None:
    """After a refusal for want of room, the KB's size then (read again: what this pass sent counts);
    when nothing was held or refused, no mark."""
    if outcome.no_room is not None:
        kb = client.get_knowledge_base(kb_id)
        size = (int(kb.get("file_count") or 0), int(kb.get("bytes_used") or 0))
        store.no_room(pair, NoRoom(outcome.no_room, *size, time.time()))
    elif not plan.held:
        store.no_room(pair, None)


def wait_until_ready(
    client: Cloud,
    kb_id: str,
    sent: dict[str, str],
    timeout: float,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Entry]:
    """Each upload or replace sent, once its file is available or failed (or the replace failed), by
    upload id; the ones still processing at ``timeout`` are missing. The first round reads the whole KB
    to find the folders they are in; the next rounds list those folders only (each listing costs the
    cloud its MemOS status calls), the whole KB again only when one of them was not seen."""
    final: dict[str, Entry] = {}
    deadline = time.monotonic() + timeout
    folders: set[str | None] | None = None
    while len(final) < len(sent):
        if folders is None:
            entries = read_tree(client, kb_id).entries
        else:
            entries = [Entry.from_api(i, "") for f in folders for i in client.list_files(kb_id, f)["files"]]
        seen: dict[str, Entry] = {}
        for entry in entries:
            if entry.upload_id in sent:
                seen[str(entry.upload_id)] = entry
            if entry.replacement_field("upload_id") in sent:
                seen.setdefault(str(entry.replacement_field("upload_id")), entry)
        for upload_id, entry in seen.items():
            failed_replace = entry.replacement_field("status") == "failed" and entry.upload_id != upload_id
            if (entry.upload_id == upload_id and entry.status in ("available", "failed")) or failed_replace:
                final[upload_id] = entry
        waiting = [u for u in sent if u not in final]
        folders = {seen[u].folder_id for u in waiting} if all(u in seen for u in waiting) else None
        if len(final) == len(sent) or time.monotonic() >= deadline:
            break
        sleep(1)
    return final

"""``memmy-kb sync DIR KB``: one pass that makes the knowledge base match the folder (docs/sync.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memmy_kb_client.cli.terminal import fit, one_line, printable

if TYPE_CHECKING:
    from memmy_kb_client.sync.remote import Entry

_VERBS = {"upload": "upload", "replace": "replace", "delete": "delete", "skip": "skip", "resume": "resume"}
_DONE = {
    "uploaded": "uploaded",
    "replaced": "replaced",
    "deleted": "deleted",
    "unchanged": "unchanged",
    "folder": "folder",
}


def plan_lines(plan: Any) -> list[str]:
    """The plan as people read it: the counts, then each path by what happens to it."""
    lines = [
        f"upload {len(plan.uploads)}, replace {len(plan.replaces)}, delete {len(plan.deletes)}, "
        f"skip {len(plan.skips)}"
        + (f", resume {len(plan.resumes)}" if plan.resumes else "")
        + (f", in flight {len(plan.waiting)}" if plan.waiting else "")
        + (f", failed {len(plan.failed)}" if plan.failed else "")
    ]
    for kind, steps in (
        ("resume", plan.resumes),
        ("upload", plan.uploads),
        ("replace", plan.replaces),
        ("delete", plan.deletes),
        ("skip", plan.skips),
    ):
        for step in steps:
            reason = f"  ({one_line(step.reason)})" if step.reason and kind in ("skip", "replace") else ""
            lines.append(f"  {_VERBS[kind]:<8} {one_line(step.path)}{reason}")
    lines += [f"  {'failed':<8} {one_line(s.path)}  ({one_line(s.reason)})" for s in plan.failed]
    if plan.held:
        lines.append(f"  {_room_line(len(plan.held))}")
    return lines


def _room_line(count: int) -> str:
    return (
        f"{_count(count, 'file')} {'waits' if count == 1 else 'wait'} for room in the knowledge base: not"
        " sent again until it holds fewer files or bytes (delete some, or ask for a higher limit)"
    )


def _progress(index: int, total: int, kind: str, path: str) -> None:
    if sys.stderr.isatty():
        end = "\n" if index == total else ""
        print(
            f"\r\033[K[{index}/{total}] {kind} {fit(path, 60).rstrip()}", end=end, file=sys.stderr, flush=True
        )


def _ask(plan: Any) -> bool:
    from memmy_kb_client.cli.delete_prompts import confirmed, stdin_is_terminal

    if not stdin_is_terminal():
        return False
    from memmy_kb_client.sync.run import to_confirm

    print(printable("\n".join(plan_lines(plan))), file=sys.stderr)
    return confirmed(question(plan, str(plan.confirm or to_confirm(plan))))


def question(plan: Any, reason: str) -> str:
    """The question a pass that waits for a confirmation asks, its reason first, the number of files that
    would go said once: the reason says it when the share decided (``it would delete 3 of the 4 files
    ...``), the question when the folder is missing or empty."""
    said = f"{reason[:1].upper()}{reason[1:]}"
    if not plan.confirm:  # not deletions: a pass that would send more files than it sends unasked
        return f"{said}. Go ahead?"
    from memmy_kb_client.sync.guard import UNCOUNTED_REASONS

    deleting = len(plan.deletes)
    if plan.confirm not in UNCOUNTED_REASONS:  # the share's reason names the number already
        return f"{said}: delete {'it' if deleting == 1 else 'them'}?"
    return f"{said}: delete the {_count(deleting, 'file')} this folder's sync brought in?"


def folder_problem(path: str) -> str | None:
    """Why ``path`` cannot be synced or linked, in a sentence: nothing there, or not a folder; None for a
    folder (or a link to one)."""
    if os.path.isdir(path):
        return None
    if os.path.lexists(path):
        return f"{path} is not a folder: give the folder itself, whose files are to be synced"
    return f"there is no folder {path}: check the path (a typo, or a disk not mounted?)"


def _synced_before(store: Any, kb: str, root: Path) -> bool:
    """Whether this folder's sync into ``kb`` brought files in (or has some on their way)."""
    from memmy_kb_client.sync.store import pair_of

    memory = store.memory(pair_of(kb, root))
    return bool(memory.synced or memory.pending)


def sync_folder(args: argparse.Namespace) -> int:
    import httpx

    from memmy_kb_client.cli.entries import NotResolved, kb_id
    from memmy_kb_client.cli.transfer_commands import client_for
    from memmy_kb_client.sdk import MemmyApiError
    from memmy_kb_client.sync.execute import SyncAborted
    from memmy_kb_client.sync.run import open_store, run_pass, store_dir, wait_until_ready
    from memmy_kb_client.sync.store import StoreUnusable

    root = Path(args.dir)
    try:
        store = open_store()
    except (StoreUnusable, OSError) as err:
        print(printable(f"error: {err}"), file=sys.stderr)
        return 1
    ready: dict[str, Entry] = {}
    waiting_failed = None
    try:
        with client_for(args) as client:
            args.kb = kb_id(client.list_knowledge_bases(), args.kb, owned=True)  # its id, from here on
            # A folder synced before and now missing is the pass's to judge (a pause, never a purge).
            problem = folder_problem(args.dir)
            if problem is not None and (
                os.path.lexists(args.dir) or not _synced_before(store, args.kb, root)
            ):
                raise NotResolved(problem)
            result = run_pass(
                client,
                store,
                args.kb,
                root,
                lock_dir=store_dir(),
                dry_run=args.dry_run,
                yes=args.yes,
                delete_share=args.delete_share,
                progress=None if args.json else _progress,
                ask=None if args.json else _ask,
            )
            if args.wait and result.outcome is not None and result.outcome.sent:
                try:
                    ready = wait_until_ready(client, args.kb, result.outcome.sent, args.timeout)
                except (MemmyApiError, httpx.HTTPError) as err:  # what the pass did is still told
                    waiting_failed = f"error while waiting: {_said(err)}"
    except (MemmyApiError, SyncAborted, OSError, httpx.HTTPError, NotResolved, StoreUnusable) as err:
        print(printable(f"error: {_said(err)}"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted: what was sent is recorded, and the next pass resumes it", file=sys.stderr)
        return 130
    finally:
        store.close()
    if args.json:
        print(printable(json.dumps(_as_json(result, ready), ensure_ascii=False, indent=2)))
    else:
        print(printable("\n".join(_result_lines(args, result, ready))))
    if waiting_failed is not None:
        print(printable(waiting_failed), file=sys.stderr)
    failed_ready = any(
        e.status == "failed" or e.replacement_field("status") == "failed" for e in ready.values()
    )
    if result.stopped or waiting_failed is not None or result.plan.failed or result.waiting_for_room:
        return 1
    return 1 if (result.outcome and result.outcome.errors) or failed_ready else 0


def _said(err: Exception) -> str:
    """An error as one line: the cloud's refusal, or that it did not answer (an httpx transport error)."""
    import httpx

    from memmy_kb_client.http_client import TransportError

    if isinstance(err, httpx.HTTPError | ConnectionError | TimeoutError | TransportError):
        return f"the cloud did not answer ({type(err).__name__}: {err})"
    return str(err)


def _result_lines(args: argparse.Namespace, result: Any, ready: dict[str, Entry]) -> list[str]:
    if args.dry_run or result.stopped:
        lines = [f"{'plan (dry run)' if args.dry_run else 'stopped'}: {one_line(str(args.dir))} -> {args.kb}"]
        lines += plan_lines(result.plan)
        confirm = result.plan.confirm or result.confirm
        if confirm:
            lines.append(
                f"{'would stop' if args.dry_run else 'nothing was changed'}: {confirm}; "
                f"run again with --yes to {'delete' if result.plan.confirm else 'send'} them"
            )
        return lines
    outcome = result.outcome
    lines = [f"{_DONE[d['action']]:<10} {one_line(d['path'])}" for d in outcome.done]
    if outcome.done or outcome.errors or outcome.sent or result.plan.waiting:
        lines += [f"{'skipped':<10} {one_line(s.path)}  ({one_line(s.reason)})" for s in result.plan.skips]
    elif result.plan.skips:
        lines.append(skip_summary(result.plan.skips))
    lines += [f"{'in flight':<10} {one_line(s.path)}" for s in result.plan.waiting]
    lines += [f"{'failed':<10} {one_line(s.path)}  ({one_line(s.reason)})" for s in result.plan.failed]
    lines += [f"{'error':<10} {one_line(e['path'])}: {one_line(e['error'])}" for e in outcome.errors]
    if result.waiting_for_room:
        lines.append(_room_line(result.waiting_for_room))
    for upload_id, path in outcome.sent.items():
        if args.wait:
            entry = ready.get(upload_id)
            status = "still processing" if entry is None else entry.status
            if entry is not None and entry.replacement_field("status") == "failed":
                status = "failed"
            lines.append(f"{status:<10} {one_line(path)}")
    counts = {
        a: sum(1 for d in outcome.done if d["action"] == a) for a in ("uploaded", "replaced", "deleted")
    }
    lines.append(
        f"synced {one_line(str(args.dir))} -> {args.kb}: uploaded {counts['uploaded']}, replaced "
        f"{counts['replaced']}, deleted {counts['deleted']}, skipped {len(result.plan.skips)}, "
        f"errors {len(outcome.errors)} ({_count(result.listings, 'listing')}, {_count(result.hashed, 'file')} hashed)"
    )
    return lines


def skip_summary(skips: list[Any]) -> str:
    """The skips of a pass that changed nothing, in one line: how many for each reason (its words up to
    the first detail), each file with its reason being what ``--dry-run`` prints."""
    reasons: dict[str, int] = {}
    for step in skips:
        kind = one_line(step.reason).split(":")[0].split(" (")[0]
        reasons[kind] = reasons.get(kind, 0) + 1
    counted = ", ".join(f"{n} {kind}" for kind, n in sorted(reasons.items(), key=lambda r: (-r[1], r[0])))
    return f"{'skipped':<10} {_count(len(skips), 'file')} ({counted}): --dry-run lists each with its reason"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _as_json(result: Any, ready: dict[str, Entry]) -> dict[str, Any]:
    outcome = result.outcome
    return {
        "plan": result.plan.summary(),
        "stopped": result.stopped,
        "done": outcome.done if outcome else [],
        "errors": outcome.errors if outcome else [],
        "ready": {outcome.sent[u]: e.status for u, e in ready.items()} if outcome else {},
        "wait_for_room": result.waiting_for_room,
        "deleted_since_confirmation": result.deleted_since_confirmation,
        "listings": result.listings,
        "hashed": result.hashed,
    }


def add_sync_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``sync`` on the top-level parser."""
    sync = commands.add_parser(
        "sync",
        help="make a knowledge base match a folder (one pass): upload new, replace changed, delete removed",
        description="Uploads new files, replaces changed ones (by SHA-256) and deletes the files this "
        "folder's sync brought in that are gone from it; sub-folders become KB folders. Files uploaded by "
        "other means are never replaced or deleted. Hidden and temporary files and what .memmyignore names "
        "(gitignore syntax) are left out. See docs/sync.md.",
    )
    sync.add_argument("dir", metavar="DIR", help="the folder")
    sync.add_argument(
        "kb",
        metavar="KB",
        help="one of your own knowledge bases: its id, or its name if no other of yours has it",
    )
    sync.add_argument("--dry-run", action="store_true", help="print the plan; change nothing")
    sync.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="delete even when the pass would delete more than --delete-share of the synced files, or the "
        "folder is empty or missing",
    )
    sync.add_argument(
        "--delete-share",
        type=float,
        default=0.25,
        help="the share of the synced files a pass may delete without --yes (default 0.25)",
    )
    sync.add_argument("--wait", action="store_true", help="wait until every file sent is available or failed")
    sync.add_argument("--timeout", type=float, default=600, help="seconds to wait at most (with --wait)")
    sync.add_argument("--endpoint", help="API URL (default: $MEMMY_KB_ENDPOINT, saved login, local stack)")
    sync.add_argument("--token", help="login token (default: $MEMMY_KB_TOKEN or the saved login)")
    sync.add_argument("--json", action="store_true", help="print the plan and what was done as JSON")
    sync.set_defaults(func=sync_folder)

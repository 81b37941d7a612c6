"""``memmy-kb desktop link|relink DIR KB``, ``unlink DIR``, ``confirm DIR`` and ``links``: each asks the running
desktop service (``/control/links``), which runs the linked folders' passes (``memmy_kb_client.sync.links``)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from memmy_kb_client.cli.terminal import one_line, printable

if TYPE_CHECKING:
    from memmy_kb_client.sync.link_state import ShownLink, UnreadableLink

    # A linked folder as the service lists it, or what it shows when its records could not be read.
    ListedLink = ShownLink | UnreadableLink

# The desktop commands' way to the service: one control request, its answer or None (the error printed).
Control = Callable[..., "dict[str, Any] | None"]


def _links(args: argparse.Namespace, control: Control) -> int:
    """``desktop link|relink DIR KB``, ``unlink DIR``, ``confirm DIR`` and ``links``: each asks the service."""
    if args.desktop in ("link", "relink"):
        from memmy_kb_client.cli.sync_commands import folder_problem

        problem = folder_problem(args.dir)
        if problem is not None:
            print(printable(f"error: {problem}"), file=sys.stderr)
            return 1
        kb = _own_kb(args.kb, control)
        if kb is None:
            return 1
        path = "/control/links" if args.desktop == "link" else "/control/links/relink"
        answer = control("POST", path, {"dir": os.path.abspath(args.dir), "kb": kb})
    elif args.desktop in ("unlink", "confirm"):
        answer = control("POST", f"/control/links/{args.desktop}", {"dir": os.path.abspath(args.dir)})
    else:
        answer = control("GET", "/control/links")
    if answer is None:
        return 1
    if args.json:
        print(printable(json.dumps(answer, ensure_ascii=False, indent=2)))
        return 0
    if args.desktop == "unlink":
        print(
            printable(
                f"unlinked {os.path.abspath(args.dir)}: it is no longer synced; its files stay in the knowledge base"
            )
        )
        return 0
    # The service's answer: its links (``ShownLink``), or the one just linked.
    listed = answer.get("links", [answer]) if args.desktop not in ("link", "relink") else [answer]
    links = cast("list[ListedLink]", listed)
    names = _kb_names(control) if links else None
    print(printable("\n".join(link_lines(links, names)) or "no linked folders"))
    return 1 if any(link.get("state") == "unreadable" for link in links) else 0


def _kb_names(control: Control) -> dict[str, str] | None:
    """Each of the caller's KBs' names by id, as the service's login reads them (None: not read)."""
    from memmy_kb_client.home.control import CLOUD_PREFIX

    listed = control("GET", f"{CLOUD_PREFIX}/knowledge-bases")
    if listed is None:
        return None
    return {str(kb.get("id")): str(kb.get("name")) for kb in listed.get("items") or []}


def _own_kb(given: str, control: Control) -> str | None:
    """The id of the KB of one's own ``given`` names (``entries.kb_id``), read from the service's login
    (``/control/cloud/knowledge-bases``, as the page reads it); None once the error is printed."""
    from memmy_kb_client.cli.entries import NotResolved, kb_id
    from memmy_kb_client.home.control import CLOUD_PREFIX

    listed = control("GET", f"{CLOUD_PREFIX}/knowledge-bases")
    if listed is None:
        return None
    try:
        return kb_id(list(listed.get("items") or []), given, owned=True)
    except NotResolved as err:
        print(printable(f"error: {err}"), file=sys.stderr)
        return None


def link_lines(links: Sequence[ListedLink], names: dict[str, str] | None = None) -> list[str]:
    """One line per linked folder, in the page's words: its KB (by name when ``names`` has it; gone when
    ``names`` was read and lacks it), its state, its last pass or what holds it and what to do. A
    folder's or a file's name (in an error) is shown on its line (``one_line``): a line break in it starts
    no line."""
    lines = []
    for link in links:
        if link.get("state") == "unreadable":  # the service's sync records could not be read: no link shown
            lines.append(one_line(f"the linked folders could not be read: {link.get('error')}"))
            continue
        shown = cast("ShownLink", link)
        lines.append(one_line(_link_line(shown, names)))
        lines += [f"  {one_line(extra)}" for extra in _told(shown)]
    return lines


def _link_line(link: ShownLink, names: dict[str, str] | None) -> str:
    import time

    from memmy_kb_client.home.advice import command, missing_folder_advice

    folder, kb_id = str(link.get("dir")), str(link.get("kb_id"))
    gone = names is not None and kb_id not in names
    kb = f"“{names[kb_id]}”" if names is not None and kb_id in names else kb_id
    state = str(link.get("state"))
    words = _STATES.get(state, state)
    if gone:
        words = (
            "Its knowledge base is gone: link the folder to another knowledge base "
            f"(`{command('desktop', 'relink', shlex.quote(folder), 'KB')}`), or stop syncing it."
        )
    elif state == "paused":
        words = f"Paused: {link.get('paused')}. Nothing is deleted until you confirm."
    elif state == "error":
        words = f"Error: {link.get('error')}"
    last = link.get("last") or {}
    counts = last.get("counts") or {}
    if state == "paused" and not gone:
        first = ", ".join(last.get("delete_first") or [])
        more = "…" if counts.get("delete", 0) > len(last.get("delete_first") or []) else ""
        words += f" · would delete {counts.get('delete', 0)} — waiting for your confirmation"
        words += f" (first: {first}{more})" if first else ""
        if str(link.get("paused")).startswith("the folder is missing"):
            words += f"; {missing_folder_advice(folder)}"
        else:
            words += f"; to delete them: `{command('desktop', 'confirm', shlex.quote(folder))}` or the page's Confirm deletion"
    elif link.get("last_pass_at"):
        words += f" · last sync {time.strftime('%H:%M:%S', time.localtime(link['last_pass_at']))}"
        did = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
        words += f" ({did})" if did else ""
    return f"{folder} -> {kb}: {words}"


# The page's words for each state (static/text-sync.js, in English).
_STATES = {"waiting": "Changes pending", "syncing": "Syncing…", "idle": "Up to date"}


def _told(link: ShownLink) -> list[str]:
    """What a link's last pass has to tell beyond its counts: failed versions, files waiting for room,
    and the deletions counted since the last confirmation."""
    told = [
        f"failed: {f.get('path')} ({f.get('reason')})" for f in link.get("failed") or []
    ]
    more = int(link.get("failed_count") or 0) - len(told)
    if more > 0:
        told.append(f"failed: {more} more")
    room = int(link.get("wait_for_room") or 0)
    if room:
        told.append(f"{room} file{'' if room == 1 else 's'} {'waits' if room == 1 else 'wait'} for room in the knowledge base")
    deleted = int(link.get("deleted_since_confirmation") or 0)
    if deleted:
        told.append(
            f"deleted since the last confirmation: {deleted} of the {link.get('brought_in')} files its sync brought in"
        )
    return told


def add_link_commands(desktop: argparse._SubParsersAction[argparse.ArgumentParser], control: Control) -> None:
    """Register ``link``, ``unlink``, ``confirm`` and ``links`` under ``desktop``."""
    link = desktop.add_parser(
        "link", help="keep a folder in sync with one of your knowledge bases (the service watches it)"
    )
    link.add_argument("dir", metavar="DIR")
    link.add_argument(
        "kb",
        metavar="KB",
        help="one of your own knowledge bases: its id, or its name if no other of yours has it",
    )
    relink = desktop.add_parser(
        "relink",
        help="point a linked folder at another of your knowledge bases (its own gone, or the wrong one)",
    )
    relink.add_argument("dir", metavar="DIR")
    relink.add_argument(
        "kb", metavar="KB", help="one of your own knowledge bases: its id, or its unique name"
    )
    unlink = desktop.add_parser("unlink", help="stop syncing a folder (its files stay in the knowledge base)")
    unlink.add_argument("dir", metavar="DIR")
    confirm = desktop.add_parser("confirm", help="let a paused linked folder's pass delete what it would")
    confirm.add_argument("dir", metavar="DIR")
    links = desktop.add_parser("links", help="the linked folders: last sync, pending, paused, errors")
    for parser in (link, relink, unlink, confirm, links):
        parser.add_argument("--json", action="store_true")
        parser.set_defaults(func=lambda args: _links(args, control))

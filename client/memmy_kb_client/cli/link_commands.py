"""``memmy-kb desktop link DIR KB``, ``unlink DIR``, ``confirm DIR`` and ``links``: each asks the running
desktop service (``/control/links``), which runs the linked folders' passes (``memmy_kb_client.sync.links``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from memmy_kb_client.cli.terminal import one_line, printable

# The desktop commands' way to the service: one control request, its answer or None (the error printed).
Control = Callable[..., "dict[str, Any] | None"]


def _links(args: argparse.Namespace, control: Control) -> int:
    """``desktop link DIR KB``, ``unlink DIR``, ``confirm DIR`` and ``links``: each asks the service."""
    if args.desktop == "link":
        kb = _own_kb(args.kb, control)
        if kb is None:
            return 1
        answer = control("POST", "/control/links", {"dir": os.path.abspath(args.dir), "kb": kb})
    elif args.desktop in ("unlink", "confirm"):
        answer = control("POST", f"/control/links/{args.desktop}", {"dir": os.path.abspath(args.dir)})
    else:
        answer = control("GET", "/control/links")
    if answer is None:
        return 1
    if args.json:
        print(printable(json.dumps(answer, ensure_ascii=False, indent=2)))
        return 0
    links = answer.get("links", [answer]) if args.desktop != "link" else [answer]
    print(printable("\n".join(link_lines(links)) or "no linked folders"))
    return 1 if any(link.get("state") == "unreadable" for link in links) else 0


def _own_kb(given: str, control: Control) -> str | None:
    """The id of the KB of one's own ``given`` names (``entries.kb_id``), read from the service's login
    (``/control/cloud/knowledge-bases``, as the page reads it); None once the error is printed."""
    from memmy_kb_client.cli.entries import NotResolved, kb_id
    from memmy_kb_client.desktop.control import CLOUD_PREFIX

    listed = control("GET", f"{CLOUD_PREFIX}/knowledge-bases")
    if listed is None:
        return None
    try:
        return kb_id(list(listed.get("items") or []), given, owned=True)
    except NotResolved as err:
        print(printable(f"memmy-kb desktop: {err}"), file=sys.stderr)
        return None


def link_lines(links: list[dict[str, Any]]) -> list[str]:
    """One line per linked folder: its KB, its state, its last pass or what holds it. A folder's or a
    file's name (in an error) is shown on its line (``one_line``): a line break in it starts no line."""
    import time

    lines = []
    for link in links:
        state = str(link.get("state"))
        if state == "unreadable":  # the service's sync records could not be read: no link is shown
            lines.append(one_line(f"the linked folders could not be read: {link.get('error')}"))
            continue
        if link.get("paused"):
            state += f" ({link['paused']}: `memmy-kb desktop confirm DIR` or the page's Confirm)"
        elif link.get("error"):
            state += f" ({link['error']})"
        last = link.get("last_pass_at")
        when = f", last pass {time.strftime('%H:%M:%S', time.localtime(last))}" if last else ""
        counts = (link.get("last") or {}).get("counts") or {}
        did = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
        line = f"{link.get('dir')} -> {link.get('kb_id')}: {state}{when}{f' ({did})' if did else ''}"
        lines.append(one_line(line))
        lines += [f"  {one_line(extra)}" for extra in _told(link)]
    return lines


def _told(link: dict[str, Any]) -> list[str]:
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
    unlink = desktop.add_parser("unlink", help="stop syncing a folder (its files stay in the knowledge base)")
    unlink.add_argument("dir", metavar="DIR")
    confirm = desktop.add_parser("confirm", help="let a paused linked folder's pass delete what it would")
    confirm.add_argument("dir", metavar="DIR")
    links = desktop.add_parser("links", help="the linked folders: last sync, pending, paused, errors")
    for parser in (link, unlink, confirm, links):
        parser.add_argument("--json", action="store_true")
        parser.set_defaults(func=lambda args: _links(args, control))

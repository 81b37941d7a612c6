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
        from memmy_kb_client.cli.sync_commands import folder_problem

        problem = folder_problem(args.dir)
        if problem is not None:
            print(printable(f"error: {problem}"), file=sys.stderr)
            return 1
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
    if args.desktop == "unlink":
        print(
            printable(
                f"unlinked {os.path.abspath(args.dir)}: it is no longer synced; its files stay in the knowledge base"
            )
        )
        return 0
    links = answer.get("links", [answer]) if args.desktop != "link" else [answer]
    print(printable("\n".join(link_lines(links)) or "no linked folders"))
    return 0


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
        print(printable(f"error: {err}"), file=sys.stderr)
        return None


def link_lines(links: list[dict[str, Any]]) -> list[str]:
    """One line per linked folder: its KB, its state, its last pass or what holds it. A folder's or a
    file's name (in an error) is shown on its line (``one_line``): a line break in it starts no line."""
    import shlex
    import time

    lines = []
    for link in links:
        state = str(link.get("state"))
        if link.get("paused"):
            confirm = f"memmy-kb desktop confirm {shlex.quote(str(link.get('dir')))}"
            state += f" ({link['paused']}: `{confirm}` or the page's Confirm)"
        elif link.get("error"):
            state += f" ({link['error']})"
        last = link.get("last_pass_at")
        when = f", last pass {time.strftime('%H:%M:%S', time.localtime(last))}" if last else ""
        counts = (link.get("last") or {}).get("counts") or {}
        did = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
        line = f"{link.get('dir')} -> {link.get('kb_id')}: {state}{when}{f' ({did})' if did else ''}"
        lines.append(one_line(line))
    return lines


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

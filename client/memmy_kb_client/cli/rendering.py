"""What the ``kb``, ``files`` and ``folders`` commands print for people (``--json`` prints the API's JSON
instead), and the upload's progress bar on stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NotRequired

from memmy_kb_client.cli.terminal import cells, fit, one_line, table
from memmy_kb_client.replies import File, FileListing, KnowledgeBase, Me, Member, Owner


@dataclass(frozen=True)
class Outcome:
    """What a command did: ``answer`` for --json (the API's object), ``text`` for people."""

    answer: Any
    text: str


class ShownProfile(Me):
    """The profile as ``memmy-kb me`` shows it: with the login the commands use."""

    login: NotRequired[str]


# The widest a file's name is shown beside its upload bar, in terminal columns.
BAR_NAME_COLUMNS = 40
BAR_COLUMNS = 30


def kb_line(kb: KnowledgeBase) -> str:
    recall = "recall on " if kb["recall"] else "recall off"
    return f"{kb['id']}  {recall}  {one_line(kb['name'])}"


def render_list(kbs: list[KnowledgeBase]) -> str:
    """Owned KBs, then those shared with me with their sharer: one table, so both parts line up."""
    owned = [kb for kb in kbs if kb["role"] == "owner"]
    shared = [kb for kb in kbs if kb["role"] != "owner"]
    rows: list[list[str]] = [_kb_row(kb) for kb in owned] + [
        [*_kb_row(kb), f"(from {_sharer(kb['owner'])}{_teams(kb)})"] for kb in shared
    ]
    lines = table(rows, indent="  ")
    out = ["My knowledge bases:", *(lines[: len(owned)] or ["  (none)"])]
    if shared:
        out += ["Shared with me:", *lines[len(owned) :]]
    return "\n".join(out)


def _kb_row(kb: KnowledgeBase) -> list[str]:
    return [kb["id"], "recall on" if kb["recall"] else "recall off", kb["name"]]


def _sharer(owner: Owner) -> str:
    """Who shared a KB: the display name, and the masked verified contact so a name alone cannot pose as
    someone else (as the page and ``recall`` show it)."""
    contact = f", {one_line(owner['contact'])}" if owner.get("contact") else ""
    return f"{one_line(owner['display_name'])}{contact}"


def _teams(kb: KnowledgeBase) -> str:
    """The teams through which one reads a KB shared with a team (``; team 'Sales'``); "" when read directly."""
    names = [f"'{one_line(team.get('name', ''))}'" for team in kb.get("teams") or []]
    if not names:
        return ""
    return f"; {'team' if len(names) == 1 else 'teams'} {', '.join(names)}"


def render_me(me: ShownProfile) -> str:
    """One's profile in words: who, the verified contacts, whether new shares join one's recall, and
    which login the commands use (``login``, added by ``memmy-kb me``)."""
    rows = [
        ["Name:", me.get("display_name") or ""],
        ["User id:", me.get("user_id") or ""],
        ["Email:", me.get("email") or "(none)"],
        ["Phone:", me.get("phone") or "(none)"],
    ]
    if "recall_new_shares" in me:
        rows.append(["New shares join recall:", "yes" if me["recall_new_shares"] else "no"])
    if me.get("login"):
        rows.append(["Login:", me["login"]])
    return "\n".join(table(rows))


def render_members(members: list[Member]) -> str:
    return "\n".join(table([m["user_id"], m["role"], m["display_name"]] for m in members))


def render_listing(listing: FileListing) -> str:
    """One level: its folders, then its files with their status, id, version and name (and why a file
    or its replace failed), as one table."""
    rows = [["folder", f["id"], "", f["name"]] for f in listing["folders"]]
    for f in listing["files"]:
        reason = f"  ({one_line(f['reason'])})" if f.get("reason") else ""
        version = f"v{f['version']}" if f.get("version") else "-"
        rows.append([f["status"], f["id"], version, f"{one_line(f['name'])}{reason}{_replacement(f)}"])
    lines = table(rows)
    if listing.get("refresh_after_seconds"):
        lines.append(f"(still processing: look again in {listing['refresh_after_seconds']} s)")
    return "\n".join(lines) or "(empty)"


def _replacement(file: File) -> str:
    """A replace beside its file: in flight, or failed with its reason (the file keeps its version)."""
    replacement = file.get("replacement")
    if not replacement:
        return ""
    if replacement["status"] == "failed":
        return f"  [replace {replacement['upload_id']} failed: {one_line(replacement.get('reason') or '')}]"
    return f"  [being replaced by {replacement['upload_id']}]"


def bar_name_columns(names: Iterable[str]) -> int:
    """The column the upload bars' names take: the widest name's, at most ``BAR_NAME_COLUMNS``."""
    return min(max((cells(one_line(name)) for name in names), default=0), BAR_NAME_COLUMNS)


def progress_bar(name: str, name_columns: int = BAR_NAME_COLUMNS) -> Callable[[int, int], None]:
    """An upload's bar on stderr, ``name`` in ``name_columns`` terminal columns so that the bars of
    files with Chinese names line up. On a terminal it is redrawn in place as the percentage changes
    and ends its line once, at 100%; elsewhere (a log, a pipe) only the finished line is written."""
    drawn = -1
    live = _is_terminal(sys.stderr)

    def show(sent: int, total: int) -> None:
        nonlocal drawn
        done = min(sent / total, 1.0) if total else 1.0
        percent = int(done * 100)
        finished = sent >= total
        if drawn == 100 or percent == drawn or not (live or finished):
            return
        drawn = 100 if finished else percent
        bar = "#" * int(done * BAR_COLUMNS)
        print(
            f"\r{fit(name, name_columns)} [{bar:<{BAR_COLUMNS}}] {drawn:3d}%",
            end="\n" if finished else "",
            file=sys.stderr,
            flush=True,
        )

    return show


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no stream, or a closed one
        return False

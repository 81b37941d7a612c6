"""The question a ``rm`` command asks before it deletes, naming what goes as people know it, and the names
``rm --yes``, ``kb unshare`` and ``kb leave`` print after."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from memmy_kb_client.cli.terminal import one_line, printable

# At most this many listings are read to find a file's or folder's name for the confirmation question.
NAME_LOOKUP_LISTINGS = 10


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):  # no stdin at all, or a closed one
        return False


def confirmed(question: str) -> bool:
    """Ask ``question [y/N]`` on the terminal (on stderr, so stdout stays the result); only y/yes is yes."""
    print(printable(f"{question} [y/N] "), end="", file=sys.stderr, flush=True)
    try:
        answer = sys.stdin.readline()
    except KeyboardInterrupt:
        answer = ""
    if not answer.endswith("\n"):
        print(file=sys.stderr)  # Ctrl-D or Ctrl-C: end the prompt's line
    return answer.strip().lower() in ("y", "yes")


def kb_label(client: Any, kb_id: str) -> str:
    """``knowledge base 'Name'`` from the KB's record; the id when the service cannot say now (5xx).

    A 4xx (no such KB, not logged in) is raised: the deletion would be refused the same way.
    """
    from memmy_kb_client.sdk import MemmyApiError

    try:
        return f"knowledge base '{one_line(client.get_knowledge_base(kb_id)['name'])}'"
    except MemmyApiError as err:
        if err.status < 500:
            raise
        return f"knowledge base {kb_id}"


def member_label(client: Any, kb_id: str, user_id: str) -> str:
    """``'Display Name' (user id)`` from the KB's member list; the id alone when it cannot be read now."""
    from memmy_kb_client.sdk import MemmyApiError

    try:
        members = client.list_members(kb_id)
    except MemmyApiError:
        return user_id  # the name is a courtesy; the removal decides
    name = next((m.get("display_name") for m in members if m.get("user_id") == user_id), None)
    return f"'{one_line(name)}' ({user_id})" if name else user_id


def find_entry(client: Any, kb_id: str, kind: str, entry_id: str) -> dict[str, Any] | None:
    """The file or folder (``kind`` "files" or "folders") with ``entry_id``, looked up breadth-first from
    the root in at most NAME_LOOKUP_LISTINGS listings; None when not found that cheaply. The name is a
    courtesy (the id is shown instead): the deletion itself decides what exists."""
    from memmy_kb_client.sdk import MemmyApiError

    pending: list[str | None] = [None]
    for _ in range(NAME_LOOKUP_LISTINGS):
        if not pending:
            break
        try:
            listing = client.list_files(kb_id, pending.pop(0))
        except MemmyApiError:
            return None  # the name is a courtesy; the deletion decides
        for entry in listing.get(kind) or []:
            if entry.get("id") == entry_id:
                return dict(entry)
        pending += [folder["id"] for folder in listing.get("folders") or []]
    return None


def kb_question(client: Any, args: argparse.Namespace) -> tuple[str, str]:
    label = kb_label(client, args.kb)
    return f"Delete {label} and all its files for everyone it is shared with?", label


def file_question(client: Any, args: argparse.Namespace) -> tuple[str, str]:
    kb = kb_label(client, args.kb)
    entry = find_entry(client, args.kb, "files", args.file)
    label = f"file '{one_line(entry['name'])}'" if entry else f"file {args.file}"
    return f"Delete {label} from {kb} for everyone it is shared with?", label


def folder_question(client: Any, args: argparse.Namespace) -> tuple[str, str]:
    kb = kb_label(client, args.kb)
    entry = find_entry(client, args.kb, "folders", args.folder)
    label = f"folder '{one_line(entry['name'])}'" if entry else f"folder {args.folder}"
    return (
        f"Delete {label} and all its subfolders and files from {kb} for everyone it is shared with?",
        label,
    )

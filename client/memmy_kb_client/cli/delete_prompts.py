"""The question a ``rm`` command asks before it deletes, naming what goes as people know it (a file or
folder given by id or by name: ``entries.resolve``), and the names ``rm --yes``, ``kb unshare`` and
``kb leave`` print after."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memmy_kb_client.cli.entries import resolve
from memmy_kb_client.cli.terminal import one_line, printable

if TYPE_CHECKING:
    from memmy_kb_client.sdk import MemmyClient


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


def kb_label(client: MemmyClient, kb_id: str) -> str:
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


def member_label(client: MemmyClient, kb_id: str, user_id: str) -> str:
    """``'Display Name' (user id)`` from the KB's member list; the id alone when it cannot be read now."""
    from memmy_kb_client.sdk import MemmyApiError

    try:
        members = client.list_members(kb_id)
    except MemmyApiError:
        return user_id  # the name is a courtesy; the removal decides
    name = next((m.get("display_name") for m in members if m.get("user_id") == user_id), None)
    return f"'{one_line(name)}' ({user_id})" if name else user_id


@dataclass(frozen=True)
class Deletion:
    """What a ``rm`` asks before it deletes, what it names after, and the id it deletes."""

    question: str
    label: str
    target: str


def kb_question(client: MemmyClient, args: argparse.Namespace) -> Deletion:
    label = kb_label(client, args.kb)
    return Deletion(f"Delete {label} and all its files for everyone it is shared with?", label, args.kb)


def file_question(client: MemmyClient, args: argparse.Namespace) -> Deletion:
    entry = resolve(client, args.kb, "files", args.file)
    kb = kb_label(client, args.kb)
    return Deletion(f"Delete {entry.label} from {kb} for everyone it is shared with?", entry.label, entry.id)


def folder_question(client: MemmyClient, args: argparse.Namespace) -> Deletion:
    entry = resolve(client, args.kb, "folders", args.folder)
    kb = kb_label(client, args.kb)
    return Deletion(
        f"Delete {entry.label} and all its subfolders and files from {kb} for everyone it is shared with?",
        entry.label,
        entry.id,
    )

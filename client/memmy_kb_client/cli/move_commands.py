"""``files mv``, ``folders mv`` and ``folders rename``: the file or folder, and a move's destination, given
by id, unique name or path of names (``entries.resolve``); what moved where said in words, the API's
object with --json."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from memmy_kb_client.cli.entries import Entry, resolve
from memmy_kb_client.cli.rendering import Outcome
from memmy_kb_client.cli.terminal import one_line

if TYPE_CHECKING:
    from memmy_kb_client.replies import File, Folder
    from memmy_kb_client.sdk import MemmyClient


def _destination(client: MemmyClient, args: argparse.Namespace, given: str | None) -> tuple[str | None, str]:
    """A move's destination folder (by id or unique name): its id (None: the root) and how to say it."""
    if given is None:
        return None, "the root"
    folder = resolve(client, args.kb, "folders", given)
    return folder.id, folder.label


def folder_id(client: MemmyClient, args: argparse.Namespace, given: str | None) -> str | None:
    """The id of the folder ``given`` names (by id or unique name); None for none (the root)."""
    return None if given is None else resolve(client, args.kb, "folders", given).id


def _moved(kind: str, answer: File | Folder) -> str:
    return Entry(kind, str(answer["id"]), str(answer["name"])).label


def move_file(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    file = resolve(client, args.kb, "files", args.file)
    destination, where = _destination(client, args, args.folder)
    moved = client.move_file(args.kb, file.id, destination)
    return Outcome(moved, f"moved {_moved('files', moved)} to {where}")


def move_folder(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    folder = resolve(client, args.kb, "folders", args.folder)
    parent_id, where = _destination(client, args, args.parent)
    moved = client.update_folder(args.kb, folder.id, parent_id=parent_id)
    return Outcome(moved, f"moved {_moved('folders', moved)} {'to' if parent_id is None else 'into'} {where}")


def rename_folder(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    folder = resolve(client, args.kb, "folders", args.folder)
    renamed = client.update_folder(args.kb, folder.id, name=args.name)
    return Outcome(renamed, f"renamed {folder.label} to '{one_line(renamed['name'])}'")

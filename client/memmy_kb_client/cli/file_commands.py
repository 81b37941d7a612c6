"""``memmy-kb files ...`` and ``folders ...``: the files and folders of a knowledge base, each taken by id,
unique name or path of names (``entries``), the KB by its id or unique name."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from memmy_kb_client.cli.commands import api_command, delete_command, shared_options
from memmy_kb_client.cli.delete_prompts import Deletion, file_question, folder_question
from memmy_kb_client.cli.entries import ANY, KB_HELP, OWN
from memmy_kb_client.cli.move_commands import folder_id, move_file, move_folder, rename_folder
from memmy_kb_client.cli.rendering import Outcome, render_listing
from memmy_kb_client.cli.transfer_commands import add_transfer_commands

if TYPE_CHECKING:
    from memmy_kb_client.sdk import MemmyClient

FILE_HELP = "the file's id, its name if no other file has it, or its path of names (产品/手册.pdf)"
FOLDER_HELP = "the folder's id, its name if no other folder has it, or its path of names (产品/旧版)"
Parent = argparse.ArgumentParser


def add_file_commands(commands: argparse._SubParsersAction[Parent]) -> None:
    """Register the ``files`` and ``folders`` groups on the top-level parser's subcommands."""
    common, confirm = shared_options()
    _add_files_group(commands, common, confirm)
    _add_folders_group(commands, common, confirm)


def _dismiss(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    client.dismiss_upload(args.kb, args.upload)
    return Outcome({"dismissed": args.upload}, "dismissed")


def _add_files_group(commands: argparse._SubParsersAction[Parent], common: Parent, confirm: Parent) -> None:
    """``files ...``: the transfers (upload, replace) and the listing, moves, dismissals and deletes."""
    files = commands.add_parser("files", help="files in a knowledge base").add_subparsers(
        dest="files_command", required=True
    )
    add_transfer_commands(files, common)
    ls = files.add_parser("ls", parents=[common], help="list one level: folders and files with their status")
    ls.add_argument("kb", metavar="KB", help=KB_HELP[ANY])
    ls.add_argument("--folder", help="the folder's id or unique name (default: the root)")
    ls.set_defaults(
        func=api_command(lambda c, a: c.list_files(a.kb, folder_id(c, a, a.folder)), render_listing, kb=ANY)
    )
    mv = files.add_parser("mv", parents=[common], help="move a file to another folder (owner)")
    mv.add_argument("kb", metavar="KB", help=KB_HELP[OWN])
    mv.add_argument("file", help=FILE_HELP)
    mv.add_argument("--folder", help="the destination folder's id or unique name (default: the root)")
    mv.set_defaults(func=api_command(move_file, kb=OWN))
    dismiss = files.add_parser(
        "dismiss",
        parents=[common],
        help="remove a failed upload, or a replace not yet sent, from the listing (owner); its id is in `files ls`",
    )
    dismiss.add_argument("kb", metavar="KB", help=KB_HELP[OWN])
    dismiss.add_argument("upload")
    dismiss.set_defaults(func=api_command(_dismiss, kb=OWN))
    files_rm = files.add_parser("rm", parents=[common, confirm], help="delete a file (owner)")
    files_rm.add_argument("kb", metavar="KB", help=KB_HELP[OWN])
    files_rm.add_argument("file", help=FILE_HELP)
    files_rm.set_defaults(
        func=delete_command(
            file_question,
            lambda c, a, file_id: c.delete_file(a.kb, file_id),
            lambda a: Deletion("", f"file {a.file}", a.file),
        )
    )


def _add_folders_group(commands: argparse._SubParsersAction[Parent], common: Parent, confirm: Parent) -> None:
    """``folders ...``."""
    folders = commands.add_parser("folders", help="folders in a knowledge base").add_subparsers(
        dest="folders_command", required=True
    )
    mk = folders.add_parser("mk", parents=[common], help="create a folder (owner)")
    mk.add_argument("kb", metavar="KB", help=KB_HELP[OWN])
    mk.add_argument("name")
    mk.add_argument("--parent", help="the parent folder's id or unique name (default: the root)")
    # The new folder's id alone, so that `FO=$(memmy-kb folders mk KB 产品)` keeps it for the next command.
    mk.set_defaults(
        func=api_command(
            lambda c, a: c.create_folder(a.kb, a.name, folder_id(c, a, a.parent)),
            lambda f: str(f["id"]),
            kb=OWN,
        )
    )
    rename = folders.add_parser("rename", parents=[common], help="rename a folder (owner)")
    rename.add_argument("kb", metavar="KB", help=KB_HELP[OWN])
    rename.add_argument("folder", help=FOLDER_HELP)
    rename.add_argument("name")
    rename.set_defaults(func=api_command(rename_folder, kb=OWN))
    mv = folders.add_parser("mv", parents=[common], help="move a folder (owner)")
    mv.add_argument("kb", metavar="KB", help=KB_HELP[OWN])
    mv.add_argument("folder", help=FOLDER_HELP)
    mv.add_argument("--parent", help="the new parent folder's id or unique name (default: the root)")
    mv.set_defaults(func=api_command(move_folder, kb=OWN))
    folders_rm = folders.add_parser(
        "rm", parents=[common, confirm], help="delete a folder with all its subfolders and files (owner)"
    )
    folders_rm.add_argument("kb", metavar="KB", help=KB_HELP[OWN])
    folders_rm.add_argument("folder", help=FOLDER_HELP)
    folders_rm.set_defaults(
        func=delete_command(
            folder_question,
            lambda c, a, folder_id: c.delete_folder(a.kb, folder_id),
            lambda a: Deletion("", f"folder {a.folder}", a.folder),
        )
    )

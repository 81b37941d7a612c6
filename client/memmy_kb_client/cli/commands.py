"""``memmy-kb login``, ``me``, ``kb ...``, ``files ...`` and ``folders ...``: the commands people use."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from memmy_kb_client.cli.delete_prompts import (
    confirmed,
    file_question,
    folder_question,
    kb_label,
    kb_question,
    member_label,
    stdin_is_terminal,
)
from memmy_kb_client.cli.rendering import kb_line, render_list, render_listing, render_members
from memmy_kb_client.cli.terminal import one_line, printable
from memmy_kb_client.cli.transfer_commands import add_transfer_commands, client_for

Command = Callable[[argparse.Namespace], int]


def _client(args: argparse.Namespace) -> Any:
    return client_for(args)


def _print_api_error(err: Any) -> None:
    print(printable(f"error: {err.message} ({err.status} {err.code})"), file=sys.stderr)


def _run(action: Callable[[Any, argparse.Namespace], Any], render: Callable[[Any], str]) -> Command:
    """Run an SDK call; print JSON with --json, else the rendering; API errors to stderr with exit 1."""

    def command(args: argparse.Namespace) -> int:
        from memmy_kb_client.sdk import MemmyApiError

        try:
            with _client(args) as client:
                result = action(client, args)
        except MemmyApiError as err:
            _print_api_error(err)
            return 1
        if args.json:
            print(printable(json.dumps(result, ensure_ascii=False, indent=2)))
        else:
            print(printable(render(result)))
        return 0

    return command


def _leave(client: Any, args: argparse.Namespace) -> str:
    from memmy_kb_client.cli.failures import CommandFailed, sign_in
    from memmy_kb_client.sdk import ClientConfig, token_subject

    route = getattr(client, "route", None)
    me = (
        route.user
        if route is not None
        else token_subject(ClientConfig.load(args.endpoint, args.token).token or "")
    )
    if me is None:
        raise CommandFailed(
            "error: leaving needs to know who you are, and no login says", sign_in(route) if route else ""
        )
    label = kb_label(client, args.kb)
    client.remove_member(args.kb, me)
    return f"left {label}"


def _unshare(client: Any, args: argparse.Namespace) -> str:
    """Revoke a reader, named as people know them (looked up first: gone from the list after)."""
    label = member_label(client, args.kb, args.user)
    client.remove_member(args.kb, args.user)
    return f"revoked {label}"


def _dismiss(client: Any, args: argparse.Namespace) -> dict[str, str]:
    client.dismiss_upload(args.kb, args.upload)
    return {"dismissed": args.upload}


def _delete(
    question: Callable[[Any, argparse.Namespace], tuple[str, str]],
    delete: Callable[[Any, argparse.Namespace], str],
    label: Callable[[argparse.Namespace], str],
) -> Command:
    """A ``rm`` command: confirm on the terminal unless --yes, delete, print what was deleted by name.

    Without a terminal on stdin and without --yes it refuses at once (exit 1) instead of waiting for an
    answer nobody can give; a declined question exits 1 with nothing deleted. With --yes the name is
    still looked up first (gone after the delete), and a lookup the service refuses leaves the id
    (``label``): the deletion itself says what exists.
    """

    def command(args: argparse.Namespace) -> int:
        from memmy_kb_client.sdk import MemmyApiError

        if not args.yes and not stdin_is_terminal():
            print(
                "error: not deleting: stdin is not a terminal to confirm on; add --yes to delete without asking",
                file=sys.stderr,
            )
            return 1
        try:
            with _client(args) as client:
                if args.yes:
                    what = _named(question, client, args, label)
                else:
                    asked, what = question(client, args)
                    if not confirmed(asked):
                        print("not deleted", file=sys.stderr)
                        return 1
                cleanup_id = delete(client, args)
        except MemmyApiError as err:
            _print_api_error(err)
            return 1
        if args.json:
            print(printable(json.dumps({"cleanup_id": cleanup_id}, ensure_ascii=False, indent=2)))
        else:
            print(printable(f"deleted {what} (cleanup {cleanup_id}: its data is removed in the background)"))
        return 0

    return command


def _named(
    question: Callable[[Any, argparse.Namespace], tuple[str, str]],
    client: Any,
    args: argparse.Namespace,
    label: Callable[[argparse.Namespace], str],
) -> str:
    """What ``question`` would name (``file 'notes.md'``), or ``label`` (the id) if the service refuses."""
    from memmy_kb_client.sdk import MemmyApiError

    try:
        return question(client, args)[1]
    except MemmyApiError:
        return label(args)


def _me(client: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The profile, and which login and way to the cloud the commands use (``cloud_route``)."""
    profile: dict[str, Any] = client.me()
    route = getattr(client, "route", None)
    return {**profile, "login": route.describe()} if route is not None else profile


def _login(args: argparse.Namespace) -> int:
    from memmy_kb_client.cli.cloud_route import DESKTOP, choose
    from memmy_kb_client.sdk import ClientConfig

    config = ClientConfig.load(args.endpoint, args.token)
    print(f"saved endpoint {config.endpoint} to {config.save()}")
    route, desktop = choose(None, None)
    if desktop is not None:
        desktop.connection.close()
    if route.kind == DESKTOP:
        print(
            printable(
                f"note: the desktop service is signed in (as {route.user}), and commands go through it while "
                "it is; this saved login is used when it is not"
            )
        )
    return 0


def add_kb_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``login``, ``me`` and the ``kb``, ``files`` and ``folders`` groups on the top-level parser's
    subcommands."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--endpoint", help="API URL (default: $MEMMY_KB_ENDPOINT, saved login, local stack)")
    common.add_argument("--token", help="login token (default: $MEMMY_KB_TOKEN or the saved login)")
    common.add_argument("--json", action="store_true", help="print the API's JSON")
    confirm = argparse.ArgumentParser(add_help=False)
    confirm.add_argument(
        "-y", "--yes", action="store_true", help="do not ask (needed when stdin is not a terminal)"
    )
    _add_kb_group(commands, common, confirm)
    _add_files_group(commands, common, confirm)
    _add_folders_group(commands, common, confirm)


Parent = argparse.ArgumentParser


def _add_kb_group(commands: argparse._SubParsersAction[Parent], common: Parent, confirm: Parent) -> None:
    """``login``, ``me`` and ``kb ...``."""
    login = commands.add_parser(
        "login", parents=[common], help="save the endpoint and token for later commands"
    )
    login.set_defaults(func=_login)
    me = commands.add_parser(
        "me", parents=[common], help="register and show your profile (name, email, phone)"
    )
    me.set_defaults(func=_run(_me, lambda r: "\n".join(f"{k}: {v}" for k, v in r.items() if v)))

    kb = commands.add_parser("kb", help="knowledge bases").add_subparsers(dest="kb_command", required=True)

    def add(
        name: str,
        help_text: str,
        action: Callable[[Any, argparse.Namespace], Any],
        render: Callable[[Any], str],
    ) -> argparse.ArgumentParser:
        parser = kb.add_parser(name, parents=[common], help=help_text)
        parser.set_defaults(func=_run(action, render))
        return parser

    add(
        "create", "create a knowledge base", lambda c, a: c.create_knowledge_base(a.name), kb_line
    ).add_argument("name")
    add("ls", "list owned and shared knowledge bases", lambda c, a: c.list_knowledge_bases(), render_list)
    rename = add(
        "rename",
        "rename a knowledge base (owner)",
        lambda c, a: c.rename_knowledge_base(a.kb, a.name),
        kb_line,
    )
    rename.add_argument("kb")
    rename.add_argument("name")
    recall = add(
        "recall",
        "turn your recall of a knowledge base on or off",
        lambda c, a: c.set_recall(a.kb, a.state == "on"),
        kb_line,
    )
    recall.add_argument("kb")
    recall.add_argument("state", choices=["on", "off"])
    share = add(
        "share",
        "share read-only by user id, phone or email (owner)",
        lambda c, a: c.share(a.kb, a.identifier),
        lambda m: f"shared with {one_line(m['display_name'])} ({m['user_id']})",
    )
    share.add_argument("kb")
    share.add_argument("identifier")
    unshare = add(
        "unshare",
        "revoke a reader's access (owner)",
        _unshare,
        str,
    )
    unshare.add_argument("kb")
    unshare.add_argument("user")
    add(
        "members",
        "list a knowledge base's members (owner)",
        lambda c, a: c.list_members(a.kb),
        render_members,
    ).add_argument("kb")
    add("leave", "leave a knowledge base shared with you", _leave, str).add_argument("kb")
    kb_rm = kb.add_parser(
        "rm", parents=[common, confirm], help="delete a knowledge base and its files for everyone (owner)"
    )
    kb_rm.add_argument("kb")
    kb_rm.set_defaults(
        func=_delete(
            kb_question, lambda c, a: c.delete_knowledge_base(a.kb), lambda a: f"knowledge base {a.kb}"
        )
    )


def _add_files_group(commands: argparse._SubParsersAction[Parent], common: Parent, confirm: Parent) -> None:
    """``files ...``: the transfers (upload, replace) and the listing, moves, dismissals and deletes."""
    files = commands.add_parser("files", help="files in a knowledge base").add_subparsers(
        dest="files_command", required=True
    )
    add_transfer_commands(files, common)
    ls = files.add_parser("ls", parents=[common], help="list one level: folders and files with their status")
    ls.add_argument("kb")
    ls.add_argument("--folder", help="folder id (default: the root)")
    ls.set_defaults(func=_run(lambda c, a: c.list_files(a.kb, a.folder), render_listing))
    mv = files.add_parser("mv", parents=[common], help="move a file to another folder (owner)")
    mv.add_argument("kb")
    mv.add_argument("file")
    mv.add_argument("--folder", help="destination folder id (default: the root)")
    mv.set_defaults(
        func=_run(lambda c, a: c.move_file(a.kb, a.file, a.folder), lambda f: f"moved {one_line(f['name'])}")
    )
    dismiss = files.add_parser(
        "dismiss",
        parents=[common],
        help="remove a failed upload, or a replace not yet sent, from the listing (owner); its id is in `files ls`",
    )
    dismiss.add_argument("kb")
    dismiss.add_argument("upload")
    dismiss.set_defaults(func=_run(_dismiss, lambda _: "dismissed"))
    files_rm = files.add_parser("rm", parents=[common, confirm], help="delete a file (owner)")
    files_rm.add_argument("kb")
    files_rm.add_argument("file")
    files_rm.set_defaults(
        func=_delete(file_question, lambda c, a: c.delete_file(a.kb, a.file), lambda a: f"file {a.file}")
    )


def _add_folders_group(commands: argparse._SubParsersAction[Parent], common: Parent, confirm: Parent) -> None:
    """``folders ...``."""
    folders = commands.add_parser("folders", help="folders in a knowledge base").add_subparsers(
        dest="folders_command", required=True
    )
    mk = folders.add_parser("mk", parents=[common], help="create a folder (owner)")
    mk.add_argument("kb")
    mk.add_argument("name")
    mk.add_argument("--parent", help="parent folder id (default: the root)")
    mk.set_defaults(
        func=_run(
            lambda c, a: c.create_folder(a.kb, a.name, a.parent),
            lambda f: f"{f['id']}  {one_line(f['name'])}",
        )
    )
    rename_folder = folders.add_parser("rename", parents=[common], help="rename a folder (owner)")
    rename_folder.add_argument("kb")
    rename_folder.add_argument("folder")
    rename_folder.add_argument("name")
    rename_folder.set_defaults(
        func=_run(
            lambda c, a: c.update_folder(a.kb, a.folder, name=a.name),
            lambda f: f"{f['id']}  {one_line(f['name'])}",
        )
    )
    move_folder = folders.add_parser("mv", parents=[common], help="move a folder (owner)")
    move_folder.add_argument("kb")
    move_folder.add_argument("folder")
    move_folder.add_argument("--parent", help="new parent folder id (default: the root)")
    move_folder.set_defaults(
        func=_run(
            lambda c, a: c.update_folder(a.kb, a.folder, parent_id=a.parent),
            lambda f: f"moved {one_line(f['name'])} to {f['parent_id'] or 'the root'}",
        )
    )
    folders_rm = folders.add_parser(
        "rm", parents=[common, confirm], help="delete a folder with all its subfolders and files (owner)"
    )
    folders_rm.add_argument("kb")
    folders_rm.add_argument("folder")
    folders_rm.set_defaults(
        func=_delete(
            folder_question, lambda c, a: c.delete_folder(a.kb, a.folder), lambda a: f"folder {a.folder}"
        )
    )

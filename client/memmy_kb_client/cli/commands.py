"""``memmy-kb login``, ``me``, ``kb ...``, ``files ...`` and ``folders ...``: the commands people use."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memmy_kb_client.cli.delete_prompts import (
    Deletion,
    confirmed,
    kb_label,
    kb_question,
    stdin_is_terminal,
)
from memmy_kb_client.cli.entries import ANY, KB_HELP, OWN, NotResolved, kb_named
from memmy_kb_client.cli.rendering import (
    Outcome,
    ShownProfile,
    kb_line,
    render_list,
    render_me,
    render_members,
)
from memmy_kb_client.cli.share_commands import add_kb_share_commands
from memmy_kb_client.cli.terminal import printable
from memmy_kb_client.cli.transfer_commands import client_for

if TYPE_CHECKING:
    from memmy_kb_client.cli.cloud_route import RoutedClient
    from memmy_kb_client.replies import Me
    from memmy_kb_client.sdk import MemmyClient

Command = Callable[[argparse.Namespace], int]


def _client(args: argparse.Namespace) -> RoutedClient:
    return client_for(args)


def _print_api_error(err: Any) -> None:
    print(printable(f"error: {err.message} ({err.status} {err.code})"), file=sys.stderr)
    if err.code in ("file_not_found", "folder_not_found"):
        print(
            "(give its id, or its name if no other has it: `memmy-kb files ls KB` lists them)",
            file=sys.stderr,
        )


def _print_json(answer: Any) -> None:
    print(printable(json.dumps(answer, ensure_ascii=False, indent=2)))


def _with_kb(client: MemmyClient, args: argparse.Namespace, kb: str | None) -> None:
    """``args.kb`` made the id of the KB it names (``kb``: ``OWN`` or ``ANY``; None: no KB taken)."""
    if kb is not None:
        args.kb = kb_named(client, args.kb, owned=kb == OWN)


def api_command(
    action: Callable[[MemmyClient, argparse.Namespace], Any],
    render: Callable[[Any], str] = str,
    *,
    kb: str | None = None,
) -> Command:
    """Run an SDK call on the KB named (``kb``: see ``_with_kb``); print JSON with --json, else the
    rendering (an ``Outcome`` carries both); API errors and names that name nothing (or several) to
    stderr with exit 1."""

    def command(args: argparse.Namespace) -> int:
        from memmy_kb_client.sdk import MemmyApiError

        try:
            with _client(args) as client:
                _with_kb(client, args, kb)
                result = action(client, args)
        except MemmyApiError as err:
            _print_api_error(err)
            return 1
        except NotResolved as err:
            print(printable(f"error: {err}"), file=sys.stderr)
            return 1
        if isinstance(result, Outcome):
            answer, text = result.answer, result.text
        else:
            answer, text = result, render(result) if not args.json else ""
        if args.json:
            _print_json(answer)
        else:
            print(printable(text))
        return 0

    return command


def _leave(client: MemmyClient, args: argparse.Namespace) -> Outcome:
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
    return Outcome({"left": args.kb}, f"left {label}")


def delete_command(
    prepare: Callable[[MemmyClient, argparse.Namespace], Deletion],
    delete: Callable[[MemmyClient, argparse.Namespace, str], str],
    fallback: Callable[[argparse.Namespace], Deletion],
) -> Command:
    """A ``rm`` command: confirm on the terminal unless --yes, delete, print what was deleted by name.

    Without a terminal on stdin and without --yes it refuses at once (exit 1) instead of waiting for an
    answer nobody can give; a declined question exits 1 with nothing deleted. With --yes the name is
    still looked up first (gone after the delete), and a lookup the service refuses leaves the argument
    as given (``fallback``): the deletion itself says what exists. A name that names nothing, or several,
    deletes nothing.
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
                _with_kb(client, args, OWN)
                if args.yes:
                    deletion = _prepared(prepare, client, args, fallback)
                else:
                    deletion = prepare(client, args)
                    if not confirmed(deletion.question):
                        print("not deleted", file=sys.stderr)
                        return 1
                cleanup_id = delete(client, args, deletion.target)
        except MemmyApiError as err:
            _print_api_error(err)
            return 1
        except NotResolved as err:
            print(printable(f"error: {err}"), file=sys.stderr)
            return 1
        if args.json:
            _print_json({"cleanup_id": cleanup_id})
        else:
            print(
                printable(
                    f"deleted {deletion.label} (cleanup {cleanup_id}: its data is removed in the background)"
                )
            )
        return 0

    return command


def _prepared(
    prepare: Callable[[MemmyClient, argparse.Namespace], Deletion],
    client: MemmyClient,
    args: argparse.Namespace,
    fallback: Callable[[argparse.Namespace], Deletion],
) -> Deletion:
    """What ``prepare`` would name and delete, or ``fallback`` (the argument as given) when the service
    refuses the lookup."""
    from memmy_kb_client.sdk import MemmyApiError

    try:
        return prepare(client, args)
    except MemmyApiError:
        return fallback(args)


def _me(client: MemmyClient, args: argparse.Namespace) -> Me | ShownProfile:
    """The profile, and which login and way to the cloud the commands use (``cloud_route``)."""
    profile = client.me()
    route = getattr(client, "route", None)
    if route is None:
        return profile
    shown: ShownProfile = {**profile, "login": route.describe()}
    return shown


def _login(args: argparse.Namespace) -> int:
    from memmy_kb_client.cli.cloud_route import DESKTOP, choose
    from memmy_kb_client.sdk import ClientConfig, token_subject

    config = ClientConfig.load(args.endpoint, args.token)
    saved = config.save()
    route, desktop = choose(None, None)
    if desktop is not None:
        desktop.connection.close()
    if args.json:  # who and where; never the token
        _print_json(
            {
                "endpoint": config.endpoint,
                "user": token_subject(config.token or ""),
                "saved_to": str(saved),
                "in_use": route.describe(),
            }
        )
        return 0
    print(printable(f"saved endpoint {config.endpoint} to {saved}"))
    if route.kind == DESKTOP:
        print(
            printable(
                f"note: the desktop service is signed in (as {route.user}), and commands go through it while "
                "it is; this saved login is used when it is not"
            )
        )
    return 0


def shared_options() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The options every cloud command takes (``--endpoint``, ``--token``, ``--json``), and ``--yes``."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--endpoint", help="API URL (default: $MEMMY_KB_ENDPOINT, saved login, local stack)")
    common.add_argument("--token", help="login token (default: $MEMMY_KB_TOKEN or the saved login)")
    common.add_argument("--json", action="store_true", help="print the API's JSON")
    confirm = argparse.ArgumentParser(add_help=False)
    confirm.add_argument(
        "-y", "--yes", action="store_true", help="do not ask (needed when stdin is not a terminal)"
    )
    return common, confirm


def add_kb_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``login``, ``me`` and the ``kb`` group on the top-level parser's subcommands (``files``
    and ``folders``: ``file_commands``)."""
    _add_kb_group(commands, *shared_options())


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
    me.set_defaults(func=api_command(_me, render_me))

    kb = commands.add_parser("kb", help="knowledge bases").add_subparsers(dest="kb_command", required=True)

    def add(
        name: str,
        help_text: str,
        action: Callable[[MemmyClient, argparse.Namespace], Any],
        render: Callable[[Any], str],
        taken: str | None = None,
    ) -> argparse.ArgumentParser:
        parser = kb.add_parser(name, parents=[common], help=help_text)
        parser.set_defaults(func=api_command(action, render, kb=taken))
        if taken is not None:
            parser.add_argument("kb", metavar="KB", help=KB_HELP[taken])
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
        OWN,
    )
    rename.add_argument("name")
    recall = add(
        "recall",
        "turn your recall of a knowledge base on or off",
        lambda c, a: c.set_recall(a.kb, a.state == "on"),
        kb_line,
        ANY,
    )
    recall.add_argument("state", choices=["on", "off"])
    add_kb_share_commands(kb, common, api_command)
    add(
        "members",
        "list a knowledge base's members (owner)",
        lambda c, a: c.list_members(a.kb),
        render_members,
        OWN,
    )
    add("leave", "leave a knowledge base shared with you", _leave, str, ANY)
    _add_kb_rm(kb, common, confirm)


def _add_kb_rm(kb: argparse._SubParsersAction[Parent], common: Parent, confirm: Parent) -> None:
    kb_rm = kb.add_parser(
        "rm", parents=[common, confirm], help="delete a knowledge base and its files for everyone (owner)"
    )
    kb_rm.add_argument("kb", metavar="KB", help=KB_HELP[OWN])
    kb_rm.set_defaults(
        func=delete_command(
            kb_question,
            lambda c, a, kb_id: c.delete_knowledge_base(kb_id),
            lambda a: Deletion("", f"knowledge base {a.kb}", a.kb),
        )
    )

"""The ``memmy-kb`` argument parser, each command group added by its module; ``memmy-kb dev ...`` forwards to
the local stack's ``memmy-local`` when it is installed (docs/architecture.md, "Client")."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from memmy_kb_client.cli.commands import add_kb_commands, shared_options
from memmy_kb_client.cli.connection_commands import add_connection_commands
from memmy_kb_client.cli.desktop_commands import add_desktop_commands
from memmy_kb_client.cli.failures import run_command
from memmy_kb_client.cli.file_commands import add_file_commands
from memmy_kb_client.cli.parser import ArgumentParser
from memmy_kb_client.cli.recall_commands import add_recall_commands
from memmy_kb_client.cli.sync_commands import add_sync_command
from memmy_kb_client.cli.team_commands import add_team_commands

LOCAL_STACK_HINT = """\
memmy-kb dev: the local development stack (memmy-local) is not installed here; the memmy-kb client does
not include it. In a checkout of the repository, install the local stack (make run / pip install -e .[local]),
then run memmy-local up, token, reconcile or memos."""


def _forward_to_local_stack(argv: Sequence[str]) -> int:
    """``memmy-kb dev ARGS`` runs ``memmy-local ARGS``, or says how to install it.

    The module is looked up by name at run time: the client distribution does not contain it, so neither
    its imports nor its type check may depend on it.
    """
    try:
        local_cli = importlib.import_module("memmy_local.cli")
    except ModuleNotFoundError as err:
        if err.name is None or err.name.split(".")[0] != "memmy_local":
            raise
        print(LOCAL_STACK_HINT, file=sys.stderr)
        return 2
    local_main: Callable[[list[str]], int] = local_cli.main
    return local_main(list(argv))


def _add_dev_alias(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # Only listed here for --help: main() forwards `dev ...` before this parser sees its arguments.
    commands.add_parser(
        "dev",
        help="the local development stack: an alias of memmy-local (installed with the repository)",
        add_help=False,
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``memmy-kb`` argument parser; each command group is added by its own ``_add_*_commands``."""
    parser: argparse.ArgumentParser = ArgumentParser(
        prog="memmy-kb", description="Memmy knowledge bases from the command line."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    _add_dev_alias(commands)
    add_kb_commands(commands)
    add_file_commands(commands)
    add_team_commands(commands, *shared_options())
    add_connection_commands(commands, shared_options()[0])
    add_recall_commands(commands)
    add_sync_command(commands)
    add_desktop_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments[:1] == ["dev"]:
        return _forward_to_local_stack(arguments[1:])
    return run_command(lambda: build_parser().parse_args(arguments))


if __name__ == "__main__":
    sys.exit(main())

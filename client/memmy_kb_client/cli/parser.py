"""The argument parser of ``memmy-kb`` and ``memmy-local``: every ``--help`` shows each option's default."""

from __future__ import annotations

import argparse
from typing import Any


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Help text plus ``(default: X)`` for an option (or optional positional) with a real default: never
    ``(default: None)`` or ``(default: False)`` as ``argparse.ArgumentDefaultsHelpFormatter`` prints, nor
    for a help text that says its default in words. ``add_subparsers`` gives every subcommand the parser
    class, so this formatter reaches them all."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        has_value = default is not None and default is not False and default is not argparse.SUPPRESS
        takes_default = bool(action.option_strings) or action.nargs in (
            argparse.OPTIONAL,
            argparse.ZERO_OR_MORE,
        )
        if has_value and takes_default and "default" not in text:
            text += " (default: %(default)s)"
        return text


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with ``DefaultsHelpFormatter``, for the parser and its subcommands."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)


def port_number(value: str) -> int:
    """A TCP port for ``--port`` options: 0 (any free one) to 65535, else a usage error, not a traceback."""
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {value!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, not {port}")
    return port

"""The argument parser both commands use (``memmy-kb`` and ``memmy-local``): every ``--help`` shows each
option's default.

``argparse.ArgumentDefaultsHelpFormatter`` would also print ``(default: None)`` and ``(default: False)``
for options that have none and for flags; this one adds ``(default: X)`` only where there is a value to
show and the help text does not already say its default in words (``default: the root``). The parser
class is what ``add_subparsers`` gives every subcommand, so the formatter reaches them all.
"""

from __future__ import annotations

import argparse
from typing import Any


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Help text plus ``(default: X)`` for an option (or optional positional) with a real default."""

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

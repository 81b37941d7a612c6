"""The ``memmy-kb`` command: the user-side client and the local development stack.

Imports stay inside the commands so that the agent hook, which runs before every turn, starts fast.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path


def _api_keys(values: Sequence[str]) -> dict[str, str]:
    """``KEY`` or ``KEY=PROJECT`` options; keys without a project share the project ``default``."""
    keys = {}
    for value in values:
        key, _, project = value.partition("=")
        keys[key] = project or "default"
    return keys


def _wait_for_interrupt() -> None:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass


def _dev_memos(args: argparse.Namespace) -> int:
    from memmy_local.memos_emulator.server import DEFAULT_API_KEY, EmulatorConfig, MemosEmulator

    config = EmulatorConfig(
        host=args.host,
        port=args.port,
        prefix=args.prefix,
        api_keys=_api_keys(args.api_key or [DEFAULT_API_KEY]),
        db_path=args.db,
        processing_delay=args.processing_delay,
    )
    with MemosEmulator(config) as emulator:
        print(
            f"MemOS emulator on {emulator.base_url} (state: {emulator.root_url}/_emulator/state)", flush=True
        )
        _wait_for_interrupt()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memmy-kb", description="Memmy knowledge bases from the command line."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    dev = commands.add_parser("dev", help="the local development stack").add_subparsers(
        dest="dev", required=True
    )
    memos = dev.add_parser("memos", help="run the MemOS emulator on its own")
    memos.add_argument("--host", default="127.0.0.1")
    memos.add_argument("--port", type=int, default=8090)
    memos.add_argument("--prefix", default="/api/openmem/v1")
    memos.add_argument(
        "--api-key",
        action="append",
        metavar="KEY[=PROJECT]",
        help="an accepted key (repeatable; default local-memos-key)",
    )
    memos.add_argument(
        "--db", type=Path, default=None, help="SQLite file to keep state in (default: a temp dir)"
    )
    memos.add_argument("--processing-delay", type=float, default=1.0, help="seconds a file stays running")
    memos.set_defaults(func=_dev_memos)
    up = dev.add_parser("up", help="start the whole local stack")
    up.set_defaults(
        func=_dev_memos,
        host="127.0.0.1",
        port=8090,
        prefix="/api/openmem/v1",
        api_key=None,
        db=None,
        processing_delay=1.0,
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

"""The ``memmy-local`` command (``up``, ``token``, ``reconcile``, ``memos``): the developers' local stack,
installed with the root project, never with the user's client (docs/architecture.md, "Local stack").
Imports stay inside the commands, so ``--help`` and ``token`` do not pay for moto, boto3 or the handlers."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memmy_kb_client.cli.parser import port_number
from memmy_local.home_commands import PROG, add_reconcile, add_token

if TYPE_CHECKING:
    from memmy_kb_client.desktop.server import DesktopService
    from memmy_local.stack import LocalStack


def _api_keys(values: Sequence[str]) -> dict[str, str]:
    """``KEY`` or ``KEY=PROJECT`` options; keys without a project share the project ``default``."""
    keys = {}
    for value in values:
        key, _, project = value.partition("=")
        keys[key] = project or "default"
    return keys


def _positive_rate(value: str) -> float:
    """A ``--memos-qps`` value: a positive number of searches a second."""
    try:
        rate = float(value)
    except ValueError:
        rate = 0.0
    if not rate > 0 or rate == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of searches a second, not {value!r}")
    return rate


def _wait_for_interrupt() -> None:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass


def _interrupt_on_sigterm(*_: Any) -> None:
    raise KeyboardInterrupt


# -------------------------------------------------------------------------------------------- memos


def _memos(args: argparse.Namespace) -> int:
    from memmy_local.memos_emulator.config import DEFAULT_API_KEY, EmulatorConfig
    from memmy_local.memos_emulator.server import MemosEmulator

    config = EmulatorConfig(
        host=args.host,
        port=args.port,
        prefix=args.prefix,
        api_keys=_api_keys(args.api_key or [DEFAULT_API_KEY]),
        db_path=args.db,
        processing_delay=args.processing_delay,
        search_qps=args.qps,
        rewrite=args.memos_rewrite,
        hit_file_ids=args.memos_file_ids,
    )
    with MemosEmulator(config) as emulator:
        print(
            f"MemOS emulator on {emulator.base_url} (state: {emulator.root_url}/_emulator/state)", flush=True
        )
        _wait_for_interrupt()
    return 0


# ----------------------------------------------------------------------------------------------- up


def _up(args: argparse.Namespace) -> int:
    from memmy_local import tokens
    from memmy_local.console import stack_console

    # Whole lines, one access line per request, metric lines in a file of their own (memmy_local.console);
    # set up before the handlers are imported, so their loggers write through it too.
    with stack_console(tokens.dev_home(args.data_dir), verbose=args.verbose) as metrics:
        return _run_stack(args, metrics)


def _run_stack(args: argparse.Namespace, metrics: Path) -> int:
    import logging
    import warnings

    from memmy_local import desktop_side
    from memmy_local.stack import LocalStack, StackConfig, StackStartError

    # moto's server and botocore log every AWS call; the gateway's one line per request is enough.
    for noisy in ("werkzeug", "botocore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # Powertools warns on every request that publishes no metric; useless noise on a dev console.
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    config = StackConfig(
        gateway_port=args.port,
        memos_port=args.memos_port,
        moto_port=args.moto_port,
        control_port=args.control_port,
        data_dir=args.data_dir,
        memos_processing_delay=args.processing_delay,
        memos_projects=args.memos_projects,
        memos_kb_quota=args.memos_kb_quota,
        memos_search_qps=args.memos_qps,
        memos_rewrite=args.memos_rewrite,
        memos_file_ids=args.memos_file_ids,
        schedule_interval=args.schedule_interval,
        idp_port=args.idp_port,
        access_token_ttl=args.access_token_ttl,
        mcp_authorization=args.mcp_authorization,
    )
    options = list(getattr(args, "options", ()))
    home = desktop_side.desktop_home(args.demo)
    # SIGTERM behaves like Ctrl-C, also while the stack is still starting, so everything started is stopped.
    signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
    # A shell starting us in the background without job control ignores SIGINT; Ctrl-C must still work.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with LocalStack(config) as stack, _desktop(stack, args, home, options) as desktop:
            demo = _demo(stack, args, desktop) if args.demo else None
            desktop_side.print_ready(stack, args.data_dir, desktop, metrics, home=home, demo=args.demo)
            if demo is not None:
                print(demo, flush=True)
            desktop_side.serve_until_stopped(desktop)
    except KeyboardInterrupt:
        print("Memmy local stack stopped", flush=True)
    except StackStartError as err:
        print(desktop_side.port_advice(err, options), file=sys.stderr)
        return 1
    return 0


def _demo(stack: LocalStack, args: argparse.Namespace, desktop: DesktopService | None) -> str:
    """``--demo``: the product story seeded through the API, the desktop signed in as its salesperson."""
    from memmy_local.demo import seed_and_describe

    state_dir = None if desktop is None else str(desktop.config.state_dir)
    return seed_and_describe(stack.api_url, stack.issuer, args.data_dir, state_dir)


def _desktop(
    stack: LocalStack, args: argparse.Namespace, home: Path, options: list[str]
) -> contextlib.AbstractContextManager[DesktopService | None]:
    """The desktop side's local service beside the stack (``desktop_side``); none with --no-desktop."""
    from memmy_local import desktop_side

    if args.no_desktop:
        return contextlib.nullcontext()
    return desktop_side.desktop_beside(stack, args.desktop_port, home, desktop_side.launcher(options))


# ------------------------------------------------------------------------------------------- parser


def _add_memos(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    memos = commands.add_parser("memos", help="run the MemOS emulator on its own")
    memos.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    memos.add_argument("--port", type=port_number, default=8090, help="the port (0 = any)")
    memos.add_argument("--prefix", default="/api/openmem/v1", help="the API's path prefix")
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
    memos.add_argument(
        "--qps",
        type=_positive_rate,
        default=None,
        metavar="N",
        help="searches a second each project answers before refusing with 40309 (default: no limit)",
    )
    _add_hit_modes(memos)
    memos.set_defaults(func=_memos)


def _add_hit_modes(parser: argparse.ArgumentParser) -> None:
    """The emulator's modes for what a search hit carries: its text rewritten, its file's id."""
    parser.add_argument(
        "--memos-rewrite",
        action="store_true",
        help="answer every search hit's text rewritten (sentences shuffled, a quarter of the words dropped or"
        " replaced, width and whitespace normalised; the same for the same memory), as a memory system that"
        " rewrites what it stores might",
    )
    parser.add_argument(
        "--memos-file-ids",
        action="store_true",
        help="name each search hit's file in its metadata.file_ids, as MemOS's open-source server keeps it"
        " (the hosted MemOS documents no file id in a hit)",
    )


def _add_memos_emulation(up: argparse.ArgumentParser) -> None:
    """``up``'s options for the MemOS the emulator plays: how long a file stays running, its projects, their
    KB cap and their search rate."""
    up.add_argument(
        "--processing-delay", type=float, default=1.0, help="seconds a new MemOS file stays running"
    )
    up.add_argument(
        "--memos-projects",
        type=int,
        default=1,
        metavar="N",
        help="MemOS projects the emulator holds, each with its own key, and the stack's backends (default 1)",
    )
    up.add_argument(
        "--memos-kb-quota",
        type=int,
        default=None,
        metavar="Q",
        help="KBs each emulated MemOS project takes (its plan's cap; default: no cap, 100 per backend)",
    )
    up.add_argument(
        "--memos-qps",
        type=_positive_rate,
        default=None,
        metavar="N",
        help="searches a second each emulated MemOS project answers before refusing with its rate-limit error"
        " (40309); also each backend's max_qps in the stack's MemOS secret (default: no limit)",
    )
    _add_hit_modes(up)


def _add_up(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    up = commands.add_parser(
        "up", help="start the whole local stack (moto, the MemOS emulator, the API gateway) until Ctrl-C"
    )
    up.add_argument(
        "--port", type=port_number, default=8080, help="the API gateway's port (0 = any free port)"
    )
    up.add_argument(
        "--memos-port", type=port_number, default=8090, help="the MemOS emulator's port (0 = any)"
    )
    up.add_argument("--moto-port", type=port_number, default=5000, help="moto's port (0 = any)")
    up.add_argument(
        "--control-port",
        type=port_number,
        default=0,
        help=f"the control endpoint's port, for {PROG} reconcile (default 0 = any free port; printed at start)",
    )
    up.add_argument(
        "--idp-port",
        type=port_number,
        default=8070,
        help="the dev identity provider's port; its URL is the tokens' issuer (default 8070; 0 = any)",
    )
    up.add_argument(
        "--access-token-ttl",
        type=int,
        default=3600,
        metavar="SECONDS",
        help="lifetime of the access tokens the dev identity provider issues (default 3600)",
    )
    up.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="keep DynamoDB items, MemOS state, the signing key and sign-ins here across restarts"
        " (default: none, a clean slate on every start)",
    )
    _add_memos_emulation(up)
    up.add_argument(
        "--schedule-interval",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help=f"run the scheduled functions (reconcile) this often (default 60; 0 = only by {PROG} reconcile)",
    )
    up.add_argument(
        "--mcp-authorization",
        choices=("dev", "service"),
        default="dev",
        help="who signs MCP clients' tokens: the dev identity provider (default), or the service's own "
        "authorization server (/oauth/*, as a deployed stack; people sign in at the dev provider)",
    )
    up.add_argument(
        "--no-desktop", action="store_true", help="do not start the desktop side's local service beside it"
    )
    up.add_argument(
        "--desktop-port",
        type=port_number,
        default=8765,
        help="the local service's port (default 8765; any free one if that is taken; 0 = any)",
    )
    up.add_argument(
        "--demo",
        action="store_true",
        help="seed the product story (two users sharing a KB of two documents, a third user's KB) and print "
        "the page's one-time link for its salesperson",
    )
    up.add_argument(
        "--verbose",
        action="store_true",
        help="also print the handlers' MemOS calls, their INFO log lines and their metric lines (always kept "
        "in local-functions.jsonl and local-metrics.jsonl in the dev home)",
    )
    up.set_defaults(func=_up)


def build_parser() -> argparse.ArgumentParser:
    """The ``memmy-local`` argument parser: up, token, reconcile, memos."""
    from memmy_kb_client.cli.parser import ArgumentParser

    parser: argparse.ArgumentParser = ArgumentParser(
        prog=PROG,
        description="Memmy's local development stack: the whole service on this machine, no AWS, no Docker.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    _add_up(commands)
    add_token(commands)
    add_reconcile(commands)
    _add_memos(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from memmy_kb_client.cli.failures import run_command

    given = list(sys.argv[1:] if argv is None else argv)

    def parse() -> argparse.Namespace:
        args = build_parser().parse_args(given)
        # ``up``'s options as typed, to say how to start it again (``desktop_side.launcher``).
        args.options = given[given.index("up") + 1 :] if "up" in given else []
        return args

    return run_command(parse)


def console() -> None:
    """The ``memmy-local`` command: ``main()``, then the process ends at once with its exit code.

    Everything ``main`` started is stopped by then (the stack's parts in reverse order, a data dir's
    tables written, the logs closed). What ``os._exit`` skips is only the interpreter's own teardown of
    the stack's heap (moto's backends, the functions' modules, about 300,000 objects): measured here at
    2-3 s of a 4 s Ctrl-C on a busy 2-core machine, against 1-1.5 s for the whole stop itself.
    """
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":
    console()

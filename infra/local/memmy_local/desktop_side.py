"""The desktop service beside the local stack, and what ``memmy-local up`` prints once it is ready.

- The service's home is the usual ``$MEMMY_KB_HOME`` (default ``~/.memmy-kb``), so the hooks find it;
  the demo's is ``demo/`` under it, so that the demo's login (the salesperson) never follows the person
  into a plain ``make run``, which starts signed out as the README says.
- Every command the banner names is one the person can run as printed: the installed script's path when
  the shell's ``PATH`` does not find it (``.venv/bin/memmy-kb``), with ``MEMMY_KB_HOME=…`` for the
  demo's home.
- The service is told how the stack was started (``make run ARGS=…`` under make, else ``memmy-local up
  …``), so its advice, and the commands' once it has stopped, say that rather than ``desktop serve``.
- Each line typed on the terminal (Enter) prints a new one-time link to the knowledge-base page.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import shlex
import signal
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from memmy_kb_client.home.advice import Launcher, command, program
from memmy_local.home_commands import PROG

if TYPE_CHECKING:
    from memmy_kb_client.desktop.server import DesktopService
    from memmy_local.stack import LocalStack
    from memmy_local.stack_config import StackStartError

READY_PREFIX: Final = "Memmy local stack ready at "
DEMO_HOME: Final = "demo"
PORT_OPTIONS: Final = (
    "--port",
    "--memos-port",
    "--moto-port",
    "--control-port",
    "--idp-port",
    "--desktop-port",
)


def desktop_home(demo: bool) -> Path:
    """The ``MEMMY_KB_HOME`` of the service beside the stack: the usual one, or the demo's own under it."""
    from memmy_kb_client.home.paths import memmy_home

    home = Path(memmy_home(os.environ))
    return home / DEMO_HOME if demo else home


def launcher(options: Sequence[str]) -> Launcher:
    """How to start this stack again, as it was started: ``make run ARGS=…`` under make (which sets
    ``MAKELEVEL`` for its recipes), else ``memmy-local up …``; in this working directory."""
    if os.environ.get("MAKELEVEL"):
        given = f" ARGS={shlex.quote(shlex.join(options))}" if options else ""
        return Launcher(f"make run{given}", os.getcwd())
    return Launcher(" ".join([program(PROG), "up", *map(shlex.quote, options)]), os.getcwd())


def _with_option(options: Sequence[str], option: str, value: str) -> list[str]:
    """``options`` with ``option`` set to ``value`` (any earlier ``option X`` or ``option=X`` dropped)."""
    kept: list[str] = []
    skip = False
    for word in options:
        if skip:
            skip = False
        elif word == option:
            skip = True
        elif not word.startswith(f"{option}="):
            kept.append(word)
    return [*kept, option, value]


def port_advice(err: StackStartError, options: Sequence[str]) -> str:
    """What ``up`` says when a port is taken: the option that moves it, for ``make run`` and for
    ``memmy-local up``, with the other options as given."""
    if not err.option:
        return f"{PROG} up: {err}; choose other ports with {', '.join(PORT_OPTIONS[:-1])} (0 = any free port)"
    # The next port up that no other option of this start already takes.
    taken = {word for before, word in itertools.pairwise(options) if before in PORT_OPTIONS}
    suggested = next(port for port in range(err.port + 1, 65536) if str(port) not in taken)
    changed = _with_option(options, err.option, str(suggested))
    others = ", ".join(option for option in PORT_OPTIONS if option != err.option)
    return (
        f"{PROG} up: {err}. Choose another port: make run ARGS={shlex.quote(shlex.join(changed))}, or "
        f"{' '.join([program(PROG), 'up', *map(shlex.quote, changed)])} ({err.option} 0: any free port). "
        f"The stack's other ports: {others}."
    )


@contextlib.contextmanager
def desktop_beside(
    stack: LocalStack, port: int, home: Path, started_by: Launcher
) -> Iterator[DesktopService | None]:
    """The desktop's local service on ``port``, pointed at the stack's API, with ``home``'s state.

    A busy port falls back to any free one (the hooks read the port from that state); another service on
    the same state dir leaves the stack without one, with a warning.
    """
    from memmy_kb_client.desktop.server import DesktopConfig, DesktopService, DesktopStartError, PortInUse
    from memmy_kb_client.home.paths import desktop_dir

    config = DesktopConfig(
        state_dir=desktop_dir({"MEMMY_KB_HOME": str(home)}),
        cloud_url=stack.api_url,
        port=port,
        launcher=started_by,
    )
    try:
        try:
            service = DesktopService(config).start()
        except PortInUse:
            service = DesktopService(dataclasses.replace(config, port=0)).start()
    except DesktopStartError as err:
        print(f"{PROG} up: no desktop service: {err}", file=sys.stderr, flush=True)
        yield None
        return
    try:
        try_kept_login(service)
        yield service
    finally:
        service.stop()


def try_kept_login(desktop: DesktopService) -> None:
    """Ask the stack once with the login the service kept from an earlier start, so that the banner says
    "the cloud refused the login" rather than "logged in" when it does (a stack started with another
    --data-dir checks another key; a data dir's key is its own)."""
    state = desktop.state
    login, _ = state.fresh_login()
    if login is not None and state.cloud.call(login.token, "GET", "/knowledge-bases").status == 401:
        state.mark_rejected(login)


def page_link(desktop: DesktopService) -> str:
    """A new one-time link to the knowledge-base page (as ``memmy-kb desktop open --no-browser``)."""
    return f"{desktop.url}/open?code={desktop.state.sessions.new_code()}"


def _desktop_lines(home: Path, demo: bool, mint: str) -> list[str]:
    kb_home = str(home)
    if demo:
        return [
            f"Desktop:      {command('hook', 'install', 'claude-code', home=kb_home)}   # or codex, gemini;"
            " the demo's own MEMMY_KB_HOME, so these hooks ask this demo's service",
        ]
    login = command("desktop", "login", home=kb_home)
    return [
        f"Desktop:      {login}   # sign in at the dev IdP in your browser (--device, --no-browser)",
        f"              or, without a browser: {mint} | {login} --token -",
        f"              {command('hook', 'install', 'claude-code', home=kb_home)}   # or codex, gemini;"
        " then ask in the agent",
    ]


def print_ready(
    stack: LocalStack,
    data_dir: Path | None,
    desktop: DesktopService | None = None,
    metrics: Path | None = None,
    *,
    home: Path | None = None,
    demo: bool = False,
) -> None:
    """The banner: each part's URL, the data kept, the logs, the desktop service, then how to use it."""
    data = f"{data_dir} (kept across restarts)" if data_dir else "none kept (a clean slate on every start)"
    data_option = f" --data-dir {shlex.quote(str(data_dir))}" if data_dir else ""
    local = program(PROG)
    mint_command = f"{local} token alice --name Alice --email alice@example.com{data_option}"
    lines = [
        f"  API:    {stack.api_url}",
        f"  MemOS:  {stack.memos_api_url}  (state: {stack.memos_url}/_emulator/state)",
        f"  moto:   {stack.moto_url}",
        f"  IdP:    {stack.idp_url}  (dev sign-in; issuer {stack.issuer})",
        f"  control: {stack.control_url}  ({local} reconcile{data_option})",
        f"  data:   {data}",
    ]
    if metrics is not None:
        from memmy_local.console import FUNCTIONS_FILE_NAME

        lines.append(
            f"  logs:   one line per request here; the functions' details in {metrics.parent}/"
            f"{FUNCTIONS_FILE_NAME}, their metrics in {metrics.name} (--verbose: here too)"
        )
    shown_home = str(home) if home is not None else None
    if desktop is not None:
        from memmy_kb_client.desktop.status_text import describe

        lines += ["", describe(desktop, shown_home)]
    lines += [
        f"{READY_PREFIX}{stack.api_url}",
        f'Get a token:  TOKEN="$({mint_command})"',
        f'Then:         curl -H "Authorization: Bearer $TOKEN" {stack.api_url}/knowledge-bases',
    ]
    if desktop is not None:
        lines += _desktop_lines(home or desktop_home(demo), demo, mint_command)
        lines.append(
            f"Page:         press Enter here for a link to the knowledge-base page "
            f"(or run {command('desktop', 'open', home=shown_home)})"
        )
    lines.append("Ctrl-C stops the stack.")
    print("\n".join(lines), flush=True)


def page_links_on_enter(desktop: DesktopService, lines: Iterable[str]) -> None:
    """A new page link for each line typed (each Enter), until the input ends or cannot be read."""
    from memmy_kb_client.desktop.page import CODE_TTL_SECONDS

    with contextlib.suppress(OSError, ValueError):
        for _ in lines:
            minutes = int(CODE_TTL_SECONDS // 60)
            print(f"  page: {page_link(desktop)}  (one use, within {minutes} minutes)", flush=True)


def serve_until_stopped(desktop: DesktopService | None) -> None:
    """Until Ctrl-C (or SIGTERM): new page links on Enter, then, once the input ends or cannot be read,
    wait. A background job's read fails rather than stopping the stack (SIGTTIN is ignored)."""
    if desktop is not None and sys.stdin is not None:
        if hasattr(signal, "SIGTTIN"):
            signal.signal(signal.SIGTTIN, signal.SIG_IGN)
        page_links_on_enter(desktop, sys.stdin)
    threading.Event().wait()

"""``memmy-kb desktop serve|open|login|logout|status|rotate-hook-token|link|unlink|confirm|links``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from memmy_kb_client.cli.link_commands import add_link_commands, link_lines
from memmy_kb_client.cli.parser import port_number
from memmy_kb_client.cli.terminal import printable
from memmy_kb_client.desktop.status_text import describe
from memmy_kb_client.home.service_state import login_state

if TYPE_CHECKING:
    from memmy_kb_client.desktop.status_reply import DesktopStatus

# How often ``desktop login`` asks the service whether the sign-in is done.
FLOW_POLL_SECONDS = 1.0


def _state_dir() -> str:
    from memmy_kb_client.home.paths import desktop_dir

    return desktop_dir(os.environ)


def _serve(args: argparse.Namespace) -> int:
    import logging
    import signal
    import threading

    from memmy_kb_client.desktop.server import DesktopConfig, DesktopService, DesktopStartError
    from memmy_kb_client.sdk import DEFAULT_ENDPOINT

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cloud = args.cloud or os.environ.get("MEMMY_KB_ENDPOINT") or DEFAULT_ENDPOINT
    state_dir = _state_dir()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        config = DesktopConfig(
            state_dir=state_dir,
            cloud_url=cloud,
            port=args.port,
            skip_trivial_prompts=not args.recall_every_prompt,
        )
        service = DesktopService(config).start()
    except (DesktopStartError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    try:
        print(describe(service), flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        service.stop()
        print("Memmy desktop service stopped", flush=True)
    return 0


def _control(method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any] | None:
    from memmy_kb_client.home.control import ControlError, ServiceUnavailable, call

    try:
        return call(_state_dir(), method, path, body)
    except ServiceUnavailable as err:
        print(f"error: {err}", file=sys.stderr)
    except ControlError as err:
        print(printable(f"error: {err.message} ({err.status} {err.code})"), file=sys.stderr)
    return None


def _read_token(args: argparse.Namespace) -> str:
    if args.token != "-":  # noqa: S105 - `-` means stdin
        return str(args.token).strip()
    if sys.stdin.isatty():
        import getpass

        return getpass.getpass("Cloud login token: ").strip()
    return sys.stdin.read().strip()


def _login(args: argparse.Namespace) -> int:
    """Sign in through the browser (or a device code), or hand the service a token (``--token``)."""
    if args.token is not None:
        token = _read_token(args)
        if not token:
            print(
                "error: no token (pass --token TOKEN, or --token - and pipe it)",
                file=sys.stderr,
            )
            return 1
        status = _control("POST", "/control/login", {"token": token})
        return 1 if status is None else _print_status(status, args.json)
    mode = "device" if args.device else "browser"
    started = _control("POST", "/control/login/start", {"mode": mode})
    if started is None:
        return 1
    say = sys.stderr if args.json else sys.stdout  # with --json, stdout is the status alone
    if mode == "device":
        uri, code = started.get("verification_uri"), started.get("user_code")
        print(printable(f"To sign in, open {uri} and enter the code {code}"), file=say)
        if started.get("verification_uri_complete"):
            print(printable(f"(or open {started['verification_uri_complete']})"), file=say)
    else:
        url = str(started["url"])
        opened = False
        if not args.no_browser:
            import webbrowser

            opened = webbrowser.open(url)
        told = (
            "Sign in in the browser window that opened." if opened else f"Open this link to sign in:\n{url}"
        )
        print(printable(told), file=say)
    print("Waiting for the sign-in...", file=say, flush=True)
    return _wait_for_flow(str(started["flow"]), float(started.get("expires_in") or 600), args.json)


def _wait_for_flow(flow: str, expires_in: float, as_json: bool) -> int:
    import time
    from urllib.parse import quote

    deadline = time.monotonic() + expires_in + 5
    answer: dict[str, Any] | None = None
    try:
        while time.monotonic() < deadline:
            answer = _control("GET", f"/control/login/flow?id={quote(flow)}")
            if answer is None:
                return 1
            if answer.get("state") != "pending":
                break
            time.sleep(FLOW_POLL_SECONDS)
    except KeyboardInterrupt:
        print("error: stopped waiting for the sign-in", file=sys.stderr)
        return 130
    state = (answer or {}).get("state", "pending")
    if state == "done":
        return _print_status(answer["status"] if answer else {}, as_json)
    why = (answer or {}).get("error") or "the sign-in was not finished in time"
    print(printable(f"error: the sign-in is {state}: {why}"), file=sys.stderr)
    status = _control("GET", "/control/status")
    if status is not None:
        _print_status(status, as_json)
    return 1


def _logout(args: argparse.Namespace) -> int:
    status = _control("POST", "/control/logout")
    return 1 if status is None else _print_status(status, args.json)


def _status(args: argparse.Namespace) -> int:
    status = _control("GET", "/control/status")
    return 1 if status is None else _print_status(status, args.json)


def _rotate(args: argparse.Namespace) -> int:
    answer = _control("POST", "/control/rotate-hook-token")
    if answer is None:
        return 1
    if args.json:
        print(printable(json.dumps(answer, ensure_ascii=False, indent=2)))
        return 0
    print(f"new hook token in {answer.get('hook_token_file')}; the old one is refused from now on")
    return 0


def _open(args: argparse.Namespace) -> int:
    """Open the knowledge-base page: a one-time code (10 minutes, single use) in the URL becomes its session."""
    answer = _control("POST", "/control/page-code")
    if answer is None:
        return 1
    url = str(answer["url"]) + (f"&lang={args.lang}" if args.lang else "")
    if args.no_browser:
        print(url)
        return 0
    import webbrowser

    if not webbrowser.open(url):
        print(f"open this link in your browser within {_minutes(answer.get('expires_in'))} (it works once):\n{url}")
    return 0


def _minutes(seconds: object) -> str:
    """``expires_in`` in words: "10 minutes" (an older service answers without it: 60 s)."""
    value = seconds if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds > 0 else 60
    return f"{value} seconds" if value < 120 else f"{value // 60} minutes"


_OUTCOMES = {
    "ok": "answered",
    "logged_out": "not asked (logged out)",
    "expired": "not asked (the login has expired)",
    "unauthorized": "refused the login (401)",
    "unreachable": "unreachable",
    "timeout": "did not answer in time",
    "cloud_error": "failed",
    "bad_reply": "answered something unreadable",
    "rate_limited": "refused it for your account's recall limit (no excerpts that turn)",
}


def _print_status(reply: Mapping[str, Any], as_json: bool) -> int:
    """The service's status (``DesktopStatus``, as ``/control/status`` and the login routes answer it)."""
    status = cast("DesktopStatus", reply)
    if as_json:
        print(printable(json.dumps(status, ensure_ascii=False, indent=2)))
        return 0
    login = status.get("login") or {}
    state = str(login.get("state"))
    line = login_state(state)
    if login.get("user"):
        line += f" as {login['user']}" + (f" ({login['name']})" if login.get("name") else "")
    if login.get("expires_at"):
        renewed = ", refreshed before it expires" if login.get("refreshes") else ""
        line += f" (until {login['expires_at']}{renewed})"
    lines = [
        f"service:  {status.get('service')}",
        f"cloud:    {status.get('cloud')}",
        f"login:    {line}",
        f"stored:   {status.get('credential_store')}",
        f"hooks:    read {status.get('hook_token_file')}",
    ]
    if login.get("note"):
        lines.append(f"note:     {login['note']}")
    if status.get("warning"):
        lines.append(f"warning:  {status['warning']}")
    last = status.get("last_recall")
    if last:
        outcome = _OUTCOMES.get(str(last.get("outcome")), str(last.get("outcome")))
        detail = "".join(
            f", {part}"
            for part in (
                f"HTTP {last['status']}" if last.get("status") else "",
                f"{last['cloud_ms']} ms" if last.get("cloud_ms") is not None else "",
                str(last.get("detail") or ""),
            )
            if part
        )
        lines.append(f"recall:   the cloud {outcome} at {last.get('at')}{detail}")
    else:
        lines.append("recall:   none asked yet")
    for line in link_lines(status.get("links") or []):
        lines.append(f"linked:   {line}")
    if status.get("skipped_prompts"):
        lines.append(
            f"skipped:  {status['skipped_prompts']} prompt{'' if status['skipped_prompts'] == 1 else 's'} with "
            'nothing to search (slash commands, "ok")'
        )
    print(printable("\n".join(lines)))
    return 0


def add_desktop_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``desktop`` and its subcommands on the top-level parser."""
    desktop = commands.add_parser(
        "desktop", help="the local service that holds your login for the agent hooks"
    ).add_subparsers(dest="desktop", required=True)

    serve = desktop.add_parser(
        "serve",
        help="run the local service on 127.0.0.1 until Ctrl-C",
        description="State lives in $MEMMY_KB_HOME/desktop (default ~/.memmy-kb/desktop).",
    )
    serve.add_argument(
        "--port", type=port_number, default=8765, help="the port on 127.0.0.1 (default 8765; 0 = any)"
    )
    serve.add_argument(
        "--cloud", help="the cloud API URL (default: $MEMMY_KB_ENDPOINT, else the local stack's)"
    )
    serve.add_argument(
        "--recall-every-prompt",
        action="store_true",
        help='search for every prompt, even a slash command or an "ok" / "继续" (default: those are skipped)',
    )
    serve.set_defaults(func=_serve)

    opener = desktop.add_parser("open", help="open the knowledge-base page in your browser")
    opener.add_argument(
        "--no-browser", action="store_true", help="print the one-time link instead of opening a browser"
    )
    opener.add_argument("--lang", choices=["zh", "en"], help="the page's language (default: the browser's)")
    opener.set_defaults(func=_open)

    login = desktop.add_parser(
        "login",
        help="sign the running service in to the cloud (in your browser)",
        description="Opens the sign-in page in your browser and waits until you have signed in. "
        "--no-browser prints the link instead, --device signs in on another device with a code, "
        "--token hands the service a token you already have (scripts, CI).",
    )
    how = login.add_mutually_exclusive_group()
    how.add_argument("--no-browser", action="store_true", help="print the sign-in link instead of opening it")
    how.add_argument("--device", action="store_true", help="sign in on another device with a code")
    how.add_argument(
        "--token",
        metavar="TOKEN",
        help="a cloud login token to keep as is; `-` reads it from stdin (a flag is visible to other local users)",
    )
    login.add_argument("--json", action="store_true", help="print the service's status as JSON")
    login.set_defaults(func=_login)

    logout = desktop.add_parser("logout", help="make the service forget the cloud login")
    logout.add_argument("--json", action="store_true")
    logout.set_defaults(func=_logout)

    status = desktop.add_parser("status", help="the service's login and its last call to the cloud")
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=_status)

    add_link_commands(desktop, _control)

    rotate = desktop.add_parser(
        "rotate-hook-token", help="issue a new hook token (the hooks pick it up; the old one stops working)"
    )
    rotate.add_argument("--json", action="store_true", help="print the service's answer as JSON")
    rotate.set_defaults(func=_rotate)

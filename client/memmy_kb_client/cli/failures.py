"""What ``memmy-kb`` and ``memmy-local`` say when something expected goes wrong: one or two lines, what
happened and the command that fixes it (named as the person can run it, ``home.advice``), never a
traceback. Expected: the cloud or the desktop service not answering, a timeout, TLS, a refused login, the
cloud failing (5xx), a closed pipe on stdout (``memmy-kb hook status | head -1``) and Ctrl-C. A bug still
shows its traceback. docs/desktop.md, "The commands through the service", lists the sentences."""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import ssl
import sys
from collections.abc import Callable
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

from memmy_kb_client.home import advice

INTERRUPTED: Final = 130  # as a shell reports a command stopped by SIGINT
_LOOPBACK: Final = frozenset({"127.0.0.1", "localhost", "::1"})
# What the desktop service answers for its own login (docs/desktop.md, "The cloud through the service").
_DESKTOP_LOGIN_CODES: Final = frozenset({"desktop_logged_out", "cloud_login_rejected"})


class CloudRoute(Protocol):
    """What the advice needs of the way a command took to the cloud (``cloud_route.CloudRoute``)."""

    @property
    def kind(self) -> str: ...
    @property
    def endpoint(self) -> str: ...
    @property
    def state_dir(self) -> str: ...
    @property
    def service(self) -> str | None: ...
    @property
    def desktop_state(self) -> str: ...


class CommandFailed(Exception):
    """A failure worded for the person: what happened, then what to run; printed as is, exit ``code``."""

    def __init__(self, what: str, fix: str = "", code: int = 1) -> None:
        super().__init__(what)
        self.lines = [what, *([fix] if fix else [])]
        self.code = code


def stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (``| head -1``): its write end reports an error."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file: no pipe of ours to have closed
        return False
    try:
        import select

        poller = select.poll()
    except (ImportError, AttributeError):  # no poll (Windows): a broken pipe is taken for stdout's
        return True
    poller.register(descriptor, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def _is_local(url: str) -> bool:
    return (urlsplit(url).hostname or "") in _LOOPBACK


def _kb(*words: str) -> str:
    return f"`{advice.command(*words)}`"


def start_cloud(url: str, state_dir: str | None = None) -> str:
    """What to do when the cloud at ``url`` does not answer: start the local stack, or check the address."""
    if not _is_local(url):
        return (
            "check the cloud's address (--endpoint, $MEMMY_KB_ENDPOINT, the saved login or the desktop "
            "service's --cloud) and your network"
        )
    launcher = advice.read_launcher(state_dir) if state_dir else None
    if launcher is not None:
        return f"is the local stack running? start it with {launcher.sentence()}"
    return "is the local stack running? start it with `make run` (in the repository's checkout)"


def sign_in(route: CloudRoute) -> str:
    """How to sign in, given what was found of the desktop service."""
    save = f"or save a token with {_kb('login', '--token', 'TOKEN')}"
    if route.desktop_state in ("signed_out", "other_cloud") or route.kind == "desktop":
        return f"sign in with {_kb('desktop', 'login')}, {save}"
    return (
        f"sign in through the desktop service ({advice.how_to_start(route.state_dir)}, then "
        f"{_kb('desktop', 'login')}), {save}"
    )


def _refused_login(route: CloudRoute, status: int, code: str) -> CommandFailed:
    """A 401 from the cloud, worded by where the token came from."""
    cloud = route.endpoint
    source = {"flag": "the token given with --token", "environment": "the token in $MEMMY_KB_TOKEN"}.get(
        route.kind, "the saved login's token"
    )
    desktop = f"the desktop service's login ({_kb('desktop', 'login')})"
    fix = {
        "flag": f"pass a valid --token, or leave it out to use {desktop}",
        "environment": f"set a new $MEMMY_KB_TOKEN, or unset it to use {desktop}",
    }.get(route.kind) or sign_in(route)
    return CommandFailed(
        f"error: the cloud at {cloud} refused {source} ({status} {code}): it has "
        "expired or is for another cloud",
        fix,
    )


def _api_failure(err: Any, route: CloudRoute) -> CommandFailed | None:
    """A refusal or failure the service answered (``MemmyApiError``) that needs more than its message."""
    status, code, message = err.status, err.code, err.message
    if route.kind == "desktop" and code in _DESKTOP_LOGIN_CODES:
        return CommandFailed(
            f"error: {message} ({status} {code}; desktop service at {route.service})",
            f"sign in again with {_kb('desktop', 'login')}",
        )
    if route.kind == "desktop" and code == "login_refresh_unreachable":
        return CommandFailed(
            f"error: {message} ({status} {code})",
            f"check your network, then {_kb('desktop', 'status')}; or sign in again with {_kb('desktop', 'login')}",
        )
    if route.kind == "desktop" and code == "cloud_unreachable":
        return CommandFailed(
            f"error: the desktop service at {route.service} cannot reach the cloud at {route.endpoint}: {message}",
            start_cloud(route.endpoint, route.state_dir),
        )
    if route.kind == "desktop" and status == 401:
        return CommandFailed(
            f"error: the desktop service at {route.service} refused this command ({status} {code}): it may have "
            "restarted",
            "run the command again",
        )
    if status == 401:
        return _refused_login(route, status, code)
    if status >= 500:
        where = "; the `make run` console shows what failed" if _is_local(route.endpoint) else ""
        return CommandFailed(
            f"error: the cloud at {route.endpoint} failed: {message} ({status} {code})",
            f"try again in a moment{where}",
        )
    return None


def _network_failure(err: BaseException, route: CloudRoute) -> CommandFailed | None:
    """The connection to the desktop service or the cloud failed; None for a local file's error."""
    from memmy_kb_client.home.proof import NotProven
    from memmy_kb_client.http_client import TransportError

    if isinstance(err, NotProven):
        return CommandFailed(f"error: {err}")
    if not isinstance(err, OSError) or err.filename is not None:
        return None
    through = route.kind == "desktop"
    target = f"the desktop service at {route.service}" if through else f"the cloud at {route.endpoint}"
    said = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    if isinstance(err, ssl.SSLError):
        return CommandFailed(
            f"error: no secure (TLS) connection to {route.endpoint}: {getattr(err, 'reason', None) or err}",
            "check the cloud's address (https:// for a deployed cloud, http://127.0.0.1:8080 for the local "
            "stack) and the system's certificates",
        )
    if isinstance(err, TimeoutError):
        fix = "try again in a moment" + (
            f"; {_kb('desktop', 'status')} says how it is"
            if through
            else f"; {start_cloud(route.endpoint, route.state_dir)}"
        )
        return CommandFailed(f"error: {target} did not answer in time ({said})", fix)
    if isinstance(err, TransportError):
        return CommandFailed(f"error: the answer from {target} could not be read ({said})", "try again")
    if through:
        return CommandFailed(
            f"error: {target} stopped answering ({said})", advice.how_to_start(route.state_dir)
        )
    return CommandFailed(
        f"error: nothing answers at {route.endpoint} ({said})", start_cloud(route.endpoint, route.state_dir)
    )


def _storage_failure(err: BaseException) -> CommandFailed | None:
    """The file's bytes could not be sent to storage (httpx, the presigned POST)."""
    import httpx

    if not isinstance(err, httpx.HTTPError):
        return None
    try:
        url = str(err.request.url)
    except RuntimeError:  # an error raised before its request was made
        url = ""
    host = urlsplit(url).netloc or "storage"
    fix = "try again: nothing of this file was stored"
    if url and _is_local(url):
        fix += "; is the local stack running? (`make run` starts its storage too)"
    return CommandFailed(f"error: the upload to {host} failed ({type(err).__name__}: {err})", fix)


def routed_failure(err: BaseException, route: CloudRoute) -> CommandFailed | None:
    """``err``, raised while a command talked to the cloud by ``route``, worded; None when the command's
    own handling says it as well (a refusal such as 404 or 409, a local file's error) or it is a bug."""
    from memmy_kb_client.sdk import MemmyApiError

    if isinstance(err, BrokenPipeError) and stdout_closed():
        return None  # the reader of our output went away: ``run_command`` ends quietly
    if isinstance(err, MemmyApiError):
        return _api_failure(err, route)
    return _network_failure(err, route) or _storage_failure(err)


def _plain_failure(err: BaseException) -> CommandFailed | None:
    """An expected failure raised outside a client's block (no route known), in one line."""
    import httpx

    from memmy_kb_client.sdk import MemmyApiError

    if isinstance(err, MemmyApiError):
        return CommandFailed(f"error: {err.message} ({err.status} {err.code})")
    if isinstance(err, OSError) and err.filename is not None:
        return CommandFailed(f"error: {err.filename}: {err.strerror or err}")
    said = f"{type(err).__name__}: {err}"
    if isinstance(err, ConnectionError | TimeoutError | socket.gaierror | ssl.SSLError | httpx.HTTPError):
        return CommandFailed(f"error: the connection failed ({said})", "try again")
    if isinstance(err, OSError):
        return CommandFailed(f"error: {said}")
    return None


def _say(lines: list[str]) -> None:
    from memmy_kb_client.cli.terminal import printable

    with contextlib.suppress(OSError):
        print(printable("\n".join(lines)), file=sys.stderr, flush=True)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush finds no closed pipe to complain of."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def run_command(parse: Callable[[], argparse.Namespace]) -> int:
    """Parse the arguments (``parse``) and run the command they name (``args.func``); what is expected to
    go wrong is said in one or two lines (module docstring). ``--help`` and usage errors (``SystemExit``)
    go on as argparse has them, their output into a closed pipe dropped quietly too."""
    try:
        args = parse()
        code: int = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, while it can still be handled
        return code
    except SystemExit:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _quiet_stdout()
        raise
    except KeyboardInterrupt:
        _say(["", "interrupted"])
        return INTERRUPTED
    except CommandFailed as err:
        _say(err.lines)
        return err.code
    except BrokenPipeError as err:
        if not stdout_closed():
            _say((_plain_failure(err) or CommandFailed(f"error: {err}")).lines)
        _quiet_stdout()
        return 1
    except Exception as err:
        failure = _plain_failure(err)
        if failure is None:
            raise
        _say(failure.lines)
        return failure.code

"""Which way a command reaches the cloud, and as whom (docs/desktop.md, "The commands through the service").

In order: a token given for this run (``--token``, else ``$MEMMY_KB_TOKEN``) is used as given, straight to
the cloud; else the running desktop service, when it proves itself under the control token and is signed
in (and serves the cloud asked for, if one is named), carries every request on its own login
(``/control/cloud/...``: the command never holds a cloud token); else the saved ``memmy-kb login``. With
none of these the command says how to sign in, and asks the cloud nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from memmy_kb_client.cli.failures import CommandFailed, routed_failure, sign_in
from memmy_kb_client.home import advice
from memmy_kb_client.sdk import DEFAULT_ENDPOINT, ClientConfig, MemmyClient, config_home, token_subject

# How long choosing may wait for the desktop service (connect, proof, status) before going without it.
STATUS_TIMEOUT_SECONDS: Final = 5.0
# A request straight to the cloud waits this long for its answer.
REQUEST_TIMEOUT_SECONDS: Final = 30.0
# A request through the service waits for the cloud as long as the service does, plus a margin.
DESKTOP_TIMEOUT_SECONDS: Final = 40.0
TOKEN_ENV: Final = "MEMMY_KB_TOKEN"  # noqa: S105 - a variable's name
ENDPOINT_ENV: Final = "MEMMY_KB_ENDPOINT"

DESKTOP: Final = "desktop"
FLAG: Final = "flag"
ENVIRONMENT: Final = "environment"
SAVED: Final = "saved"
NONE: Final = "none"


@dataclass(frozen=True)
class CloudRoute:
    """The way chosen: ``kind`` (one of the constants above), the cloud's URL, and for the desktop the
    service's URL and the signed-in user; ``token`` is the cloud token only when it is sent directly.
    ``desktop_state`` is what was found of the desktop service (``absent``, ``not_answering``,
    ``not_proven``, ``signed_out``, ``other_cloud``, ``signed_in``; empty when it was not asked), and
    ``desktop_note`` says why it was not used."""

    kind: str
    endpoint: str
    state_dir: str
    token: str | None = None
    user: str | None = None
    service: str | None = None
    desktop_state: str = ""
    desktop_note: str = ""

    def describe(self) -> str:
        """One line for ``memmy-kb me``: which identity, which way, which cloud."""
        if self.kind == DESKTOP:
            return f"through the desktop service at {self.service}, signed in as {self.user} (cloud: {self.endpoint})"
        source = {
            FLAG: "the --token flag",
            ENVIRONMENT: f"${TOKEN_ENV}",
            SAVED: f"the saved login in {config_home() / 'config.json'}",
        }.get(self.kind)
        if source is None:
            return f"not signed in (cloud: {self.endpoint})"
        return f"{source}, as {self.user or 'a token whose user is unknown'}, straight to {self.endpoint}"


def _saved(env: Mapping[str, str]) -> dict[str, Any]:
    """``memmy-kb login``'s file; ``CommandFailed`` when it is there but cannot be read."""
    from memmy_kb_client.home.paths import memmy_home

    path = Path(memmy_home(env)) / "config.json"
    fix = f"save the login again with `{advice.command('login', '--endpoint', 'URL', '--token', 'TOKEN')}`"
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        raise CommandFailed(f"error: the saved login {path} cannot be read ({err})", fix) from err
    if not isinstance(saved, dict):
        raise CommandFailed(f"error: the saved login {path} is not a JSON object", fix)
    return saved


@dataclass
class _Desktop:
    """The signed-in desktop service, proven, with its first connection still open."""

    connection: Any
    token: str
    port: int
    service: str
    cloud: str
    user: str | None


def _signed_in_desktop(state_dir: str) -> tuple[_Desktop | None, str, str]:
    """The running desktop service when it proves itself and is signed in, else None; what was found
    (``CloudRoute.desktop_state``) and why it is not used."""
    from memmy_kb_client.home.control import CONTROL_TOKEN
    from memmy_kb_client.home.credentials import read_service_record
    from memmy_kb_client.home.proof import NotProven
    from memmy_kb_client.home.proven import ProvenConnection
    from memmy_kb_client.http_client import OK, classify

    record = read_service_record(state_dir)
    if record is None:
        return None, "absent", "no desktop service is running"
    proven = ProvenConnection(record.port, record.token, "control", timeout=STATUS_TIMEOUT_SECONDS)
    try:
        proven.open()
        proven.prove(CONTROL_TOKEN)
        reply = proven.request("GET", "/control/status")
    except NotProven as err:
        proven.close()
        return None, "not_proven", str(err)
    except OSError:
        proven.close()
        return (
            None,
            "not_answering",
            f"the desktop service recorded at 127.0.0.1:{record.port} does not answer",
        )
    result = classify(reply.status, reply.data)
    status = result.answer if result.outcome == OK and isinstance(result.answer, dict) else {}
    found = status.get("login")
    login: dict[str, Any] = found if isinstance(found, dict) else {}
    if login.get("state") != "logged_in" or not isinstance(status.get("cloud"), str):
        proven.close()
        return (
            None,
            "signed_out",
            f"the desktop service is not signed in ({login.get('state') or 'no status'})",
        )
    connection = proven.connection
    connection.timeout = DESKTOP_TIMEOUT_SECONDS
    if connection.sock is not None:
        connection.sock.settimeout(DESKTOP_TIMEOUT_SECONDS)
    service = str(status.get("service") or f"http://127.0.0.1:{record.port}")
    user = login.get("user") if isinstance(login.get("user"), str) else None
    cloud = str(status["cloud"]).rstrip("/")
    return _Desktop(connection, record.token, record.port, service, cloud, user), "signed_in", ""


def _desktop_client(desktop: _Desktop, route: CloudRoute) -> RoutedClient:
    """A client whose requests go to ``/control/cloud/...`` on the service, each connection proven first
    (the one already proven is used first), with the control token, never a cloud token."""
    from memmy_kb_client.home.control import CLOUD_PREFIX, CONTROL_TOKEN
    from memmy_kb_client.home.proven import ProvenConnection
    from memmy_kb_client.http_client import HttpClient

    port = desktop.port
    first = [desktop.connection] if desktop.connection.sock is not None else []  # not if it was closed

    def connect() -> Any:
        if first:
            return first.pop()
        proven = ProvenConnection(port, desktop.token, "control", timeout=DESKTOP_TIMEOUT_SECONDS)
        proven.open()
        proven.prove(CONTROL_TOKEN)
        return proven.connection

    base = f"http://127.0.0.1:{port}{CLOUD_PREFIX}"
    http = HttpClient(base, timeout=DESKTOP_TIMEOUT_SECONDS, connect=connect)
    return RoutedClient(route, ClientConfig(base, desktop.token), http=http)


class RoutedClient(MemmyClient):
    """The SDK's client with the way it was chosen (``route``), for ``me`` and for the errors' advice."""

    def __init__(self, route: CloudRoute, config: ClientConfig, **options: Any) -> None:
        super().__init__(config, **options)
        self.route = route

    def __enter__(self) -> RoutedClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        err = exc[1] if len(exc) > 1 else None
        if isinstance(err, BaseException):
            failure = routed_failure(err, self.route)
            if failure is not None:
                raise failure from err


def choose(
    endpoint: str | None, token: str | None, env: Mapping[str, str] = os.environ
) -> tuple[CloudRoute, _Desktop | None]:
    """The way for a command with these ``--endpoint`` and ``--token`` flags (module docstring)."""
    from memmy_kb_client.home.paths import desktop_dir

    state_dir = desktop_dir(env)
    named = (endpoint or env.get(ENDPOINT_ENV) or "").rstrip("/") or None
    given = token or env.get(TOKEN_ENV)
    if given:
        cloud = (named or str(_saved(env).get("endpoint") or DEFAULT_ENDPOINT)).rstrip("/")
        return CloudRoute(FLAG if token else ENVIRONMENT, cloud, state_dir, given, token_subject(given)), None
    desktop, found, note = _signed_in_desktop(state_dir)
    if desktop is not None and (named is None or named == desktop.cloud):
        return CloudRoute(
            DESKTOP, desktop.cloud, state_dir, None, desktop.user, desktop.service, found
        ), desktop
    if desktop is not None:
        desktop.connection.close()
        found, note = "other_cloud", f"the desktop service is signed in to {desktop.cloud}, not {named}"
    saved = _saved(env)
    cloud = (named or str(saved.get("endpoint") or DEFAULT_ENDPOINT)).rstrip("/")
    saved_token = saved.get("token") if isinstance(saved.get("token"), str) else None
    if saved_token:
        user = token_subject(saved_token)
        return CloudRoute(SAVED, cloud, state_dir, saved_token, user, None, found, note), None
    return CloudRoute(NONE, cloud, state_dir, desktop_state=found, desktop_note=note), None


_WITHOUT_LOGIN: Final = {
    "absent": "no desktop service is running",
    "not_answering": "the desktop service does not answer",
    "signed_out": "the desktop service is signed out",
}


def client_for(endpoint: str | None, token: str | None, env: Mapping[str, str] = os.environ) -> RoutedClient:
    """The SDK's client for a command, by the way ``choose`` picks; ``CommandFailed`` saying how to sign in
    when there is no login at all (the cloud would only answer 401)."""
    route, desktop = choose(endpoint, token, env)
    if desktop is not None:
        return _desktop_client(desktop, route)
    if route.kind == NONE and route.desktop_state in _WITHOUT_LOGIN:
        why = _WITHOUT_LOGIN[route.desktop_state]
        raise CommandFailed(f"error: not signed in: {why}, and there is no saved login", sign_in(route))
    if route.kind == NONE and route.desktop_state == "other_cloud":
        save = advice.command("login", "--endpoint", route.endpoint, "--token", "TOKEN")
        raise CommandFailed(
            f"error: not signed in to {route.endpoint}: {route.desktop_note}, and there is no saved login",
            f"leave out --endpoint and $MEMMY_KB_ENDPOINT to use the desktop service, or save a token with `{save}`",
        )
    if route.kind == NONE:  # the proof's refusal: what was found, and what to do about it
        save = advice.command("login", "--token", "TOKEN")
        raise CommandFailed(
            f"error: not signed in: there is no saved login, and {route.desktop_note}",
            f"or save a token with `{save}` to go without the desktop service",
        )
    return RoutedClient(route, ClientConfig(route.endpoint, route.token), timeout=REQUEST_TIMEOUT_SECONDS)

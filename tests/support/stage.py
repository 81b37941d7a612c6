"""The ``stage`` fixture: the stack the e2e tier runs against, and the people it signs in as.

Without ``MEMMY_KB_E2E_URL`` the stage is the local stack this session starts (``local_stack``), and a
user's token is signed with its key, as ``memmy-local token`` signs one. With it, the stage is a deployed
stack at that URL (its ``ApiUrl`` output), and each user's token is printed by the operator's
``MEMMY_KB_E2E_TOKEN_COMMAND``, run as ``COMMAND USER_NAME [--name N] [--email E] [--phone P]`` (the
arguments of ``memmy-local token``): a command seeing a name for the first time makes that person, with
the profile claims given asserted as verified; asked again, it signs the same person in again.

On a deployed stage the user names are ``memmy-e2e-<run>-<name>`` and the KBs ``e2e-<run> <name>``
(``kb_name``), so a run's people and data are recognisable and no two runs share any; at the end of the
session every KB of the run's people that carries the run's prefix is deleted through the API.
Tests that need the local stack's internals carry ``@pytest.mark.local_stack("why")`` and are skipped
there (tests/e2e/conftest.py). README, "Deploying", says how an operator runs it.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import subprocess
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest

from tests.support.stack import RunningStack

URL_ENV = "MEMMY_KB_E2E_URL"
TOKEN_COMMAND_ENV = "MEMMY_KB_E2E_TOKEN_COMMAND"
# Optional: the run's id in the names (default: one per pytest run, shared by its xdist workers).
RUN_ENV = "MEMMY_KB_E2E_RUN"
USER_PREFIX = "memmy-e2e"
KB_PREFIX = "e2e"
# The profile claims a token command is asked for (memmy-local token's options).
STAGE_CLAIMS = ("name", "email", "phone")
USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
TOKEN_COMMAND_TIMEOUT_SECONDS = 120
# A cached token with less than this left is asked for again.
TOKEN_MARGIN_SECONDS = 300


class ApiTarget(Protocol):
    """What the e2e helpers need of a stack: its API's base URL (a ``Stage`` or a ``RunningStack``)."""

    @property
    def api_url(self) -> str: ...


@dataclass(frozen=True)
class StageUser:
    """A person of the stage: their Memmy user id (the token's ``sub``) and a bearer token."""

    user_id: str
    token: str


def token_claims(token: str) -> dict[str, Any]:
    """A JWT's payload, unverified (the stage verifies it; a test only reads ``sub`` and ``exp``)."""
    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError("not a JWT (three dot-separated parts)")
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    claims = json.loads(base64.urlsafe_b64decode(payload))
    if not isinstance(claims, dict) or not isinstance(claims.get("sub"), str):
        raise ValueError("the token's payload has no sub")
    return claims


def command_arguments(user_name: str, claims: dict[str, str]) -> list[str]:
    """The arguments a token command is run with for ``user_name`` and its profile ``claims``."""
    arguments = [user_name]
    for claim in STAGE_CLAIMS:
        if claims.get(claim) is not None:
            arguments += [f"--{claim}", claims[claim]]
    return arguments


def run_token_command(command: str, user_name: str, claims: dict[str, str]) -> str:
    """The bearer token ``command`` prints for ``user_name`` (its last line); ``RuntimeError`` otherwise.

    What went wrong is said without the output, which holds the token when there is one.
    """
    argv = [*shlex.split(command), *command_arguments(user_name, claims)]
    try:
        done = subprocess.run(  # noqa: S603 - the operator's own command
            argv, capture_output=True, text=True, timeout=TOKEN_COMMAND_TIMEOUT_SECONDS, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise RuntimeError(f"{TOKEN_COMMAND_ENV} could not be run for {user_name}: {err}") from err
    if done.returncode != 0:
        raise RuntimeError(
            f"{TOKEN_COMMAND_ENV} exited with {done.returncode} for {user_name}: {done.stderr.strip()[-2000:]}"
        )
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    token = lines[-1] if lines else ""
    try:
        token_claims(token)
    except ValueError as err:
        raise RuntimeError(f"{TOKEN_COMMAND_ENV} printed no login token for {user_name} ({err})") from err
    return token


@dataclass
class Stage:
    """The stack under test: its API URL, its people, and (locally) the running stack itself.

    ``local`` is the ``RunningStack`` on the local stack and None on a deployed one: a test reads the
    local stack's internals (the emulator, moto, the stack's log) only under ``if stage.local``.
    """

    api_url: str
    local: RunningStack | None
    run_id: str = ""
    issue: Callable[[str, dict[str, str]], str] | None = None
    people: dict[str, tuple[dict[str, str], str]] = field(default_factory=dict)

    @classmethod
    def on_local(cls, stack: RunningStack) -> Stage:
        return cls(api_url=stack.api_url, local=stack)

    @classmethod
    def deployed(cls, api_url: str, token_command: str, run_id: str) -> Stage:
        def issue(user_name: str, claims: dict[str, str]) -> str:
            return run_token_command(token_command, user_name, claims)

        return cls(api_url=api_url.rstrip("/"), local=None, run_id=run_id, issue=issue)

    def user(self, handle: str, /, **claims: Any) -> StageUser:
        """A new person called ``handle`` (unique within the run: tests add a random suffix), with the
        profile claims ``name``, ``email`` and ``phone`` as ``memmy-local token`` takes them.

        Locally the user id is ``handle`` and any claim ``issue_token`` takes may be given (an expired or
        foreign token); on a deployed stage only the profile claims can be, and the user id is the sub
        the login provider gave.
        """
        if self.local is not None:
            return StageUser(handle, self.local.token(handle, **claims))
        if unknown := set(claims) - set(STAGE_CLAIMS):
            raise ValueError(
                f"{sorted(unknown)}: only the local stack's signer sets these; mark the test local_stack"
            )
        if not USER_NAME.match(handle):
            raise ValueError(f"{handle!r}: a stage user's handle is ASCII letters, digits, '.', '_' and '-'")
        user_name = f"{USER_PREFIX}-{self.run_id}-{handle}"
        token = self._issue(user_name, dict(claims))
        self.people[user_name] = (dict(claims), token)
        return StageUser(token_claims(token)["sub"], token)

    def kb_name(self, name: str) -> str:
        """The name a test gives a KB it makes: ``name`` locally, with the run's prefix on a deployed stage."""
        return name if self.local is not None else f"{KB_PREFIX}-{self.run_id} {name}"

    def _issue(self, user_name: str, claims: dict[str, str]) -> str:
        assert self.issue is not None
        return self.issue(user_name, claims)

    def token_for(self, user_name: str) -> str:
        """A token of ``user_name``, one of the people this stage made: the last one, or a new one when
        it has less than ``TOKEN_MARGIN_SECONDS`` left."""
        claims, token = self.people[user_name]
        if token_claims(token).get("exp", 0) - time.time() < TOKEN_MARGIN_SECONDS:
            token = self._issue(user_name, claims)
            self.people[user_name] = (claims, token)
        return token

    def clean_up(self) -> list[str]:
        """Delete every KB the run's people own that carries the run's prefix; what could not be deleted."""
        prefix = self.kb_name("")
        left: list[str] = []
        for user_name in list(self.people):
            headers = {"Authorization": f"Bearer {self.token_for(user_name)}"}
            with httpx.Client(base_url=self.api_url, headers=headers, timeout=30) as api:
                listed = api.get("/knowledge-bases")
                if listed.status_code != HTTPStatus.OK:
                    left.append(f"{user_name}: listing answered {listed.status_code}")
                    continue
                for kb in listed.json()["items"]:
                    if kb["role"] != "owner" or not kb["name"].startswith(prefix):
                        continue
                    deleted = api.delete(f"/knowledge-bases/{kb['id']}")
                    if deleted.status_code not in (HTTPStatus.ACCEPTED, HTTPStatus.NOT_FOUND):
                        left.append(f"{kb['id']} ({kb['name']}): {deleted.status_code}")
        return left


def stage_settings() -> tuple[str, str] | None:
    """``(url, token command)`` when the e2e tier runs against a deployed stage, None for the local stack;
    ``pytest.UsageError`` when the URL comes without its token command."""
    url = os.environ.get(URL_ENV, "").strip()
    if not url:
        return None
    command = os.environ.get(TOKEN_COMMAND_ENV, "").strip()
    if not command:
        raise pytest.UsageError(
            f"{URL_ENV} is set but {TOKEN_COMMAND_ENV} is not: the e2e tier needs a command printing a login "
            'token for a user name (README, "Deploying")'
        )
    return url, command


def run_id(config: pytest.Config) -> str:
    """The run's id: ``MEMMY_KB_E2E_RUN``, else the one pytest-xdist shares among its workers, else new."""
    given = os.environ.get(RUN_ENV, "").strip()
    if given:
        return given
    shared = getattr(config, "workerinput", {}).get("testrunuid")
    return str(shared or uuid.uuid4().hex)[:8]


LOCAL_STACK_MARKER = "local_stack"


def local_only_reason(item: pytest.Item) -> str | None:
    """Why ``item`` runs on the local stack only (its marker's reason), or None when it runs on any stage."""
    marker = item.get_closest_marker(LOCAL_STACK_MARKER)
    if marker is None:
        return None
    if not marker.args or not isinstance(marker.args[0], str) or not marker.args[0].strip():
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.{LOCAL_STACK_MARKER} needs its reason, a sentence"
        )
    return str(marker.args[0])


def mark_local_only(items: list[pytest.Item], *, under: Path, deployed: bool) -> None:
    """Skip the tests under ``under`` marked ``local_stack`` when the stage is ``deployed``, saying why;
    refuse (``pytest.UsageError``) one that asks for the ``local_stack`` fixture without the marker."""
    for item in items:
        if under not in item.path.parents:
            continue
        reason = local_only_reason(item)
        if reason is None and LOCAL_STACK_MARKER in getattr(item, "fixturenames", ()):
            raise pytest.UsageError(
                f"{item.nodeid} uses the {LOCAL_STACK_MARKER} fixture: take the stage fixture, or mark it "
                f'@pytest.mark.{LOCAL_STACK_MARKER}("why it needs the local stack")'
            )
        if deployed and reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"local stack only ({URL_ENV} is set): {reason}"))


def pytest_configure(config: pytest.Config) -> None:
    stage_settings()  # a URL without its token command stops the run before anything starts


@pytest.fixture(scope="session")
def stage(request: pytest.FixtureRequest) -> Iterator[Stage]:
    """The stack the e2e tier runs against: the local stack, or the deployed one ``MEMMY_KB_E2E_URL`` names."""
    settings = stage_settings()
    if settings is None:
        yield Stage.on_local(request.getfixturevalue("local_stack"))
        return
    deployed = Stage.deployed(*settings, run_id=run_id(request.config))
    try:
        yield deployed
    finally:
        left = deployed.clean_up()
        if left:
            warnings.warn(f"run {deployed.run_id}: {len(left)} KBs were not deleted: {left}", stacklevel=1)

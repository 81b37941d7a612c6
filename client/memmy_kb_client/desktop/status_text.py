"""The desktop service's state in words: what ``serve`` prints once it listens, and the running service
as a hook would find it (asked with the control client). docs/desktop.md, "The local service"."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memmy_kb_client.desktop.server import DesktopService

READY_PREFIX = "Memmy desktop service on "

LOGIN_STATES = {
    "logged_in": "logged in",
    "logged_out": "logged out: run `memmy-kb desktop login`",
    "expired": "the login has expired: run `memmy-kb desktop login`",
    "rejected": "the cloud refused the login (401): run `memmy-kb desktop login` again",
}


def describe(service: DesktopService) -> str:
    """What ``serve`` (and ``memmy-local up``) print once the service listens; the first line is machine-read."""
    status = service.state.status()
    login = status["login"]
    logged = (
        f"logged in as {login.get('user')}" if login["state"] == "logged_in" else LOGIN_STATES[login["state"]]
    )
    lines = [
        f"{READY_PREFIX}{service.url} (cloud: {status['cloud']})",
        f"  state:  {service.config.state_dir}",
        f"  login:  {logged} ({status['credential_store']})",
        f"  hooks:  read {status['hook_token_file']}",
        "  page:   `memmy-kb desktop open` (a one-time link to the knowledge-base page)",
    ]
    if status.get("warning"):
        lines.append(f"  note:   {status['warning']}")
    return "\n".join(lines)


def service_state(state_dir: str, timeout: float = 3.0) -> tuple[str, str]:
    """The desktop service as a hook would find it, asked of the running service: ``(state, sentence)``.

    ``state`` is ``ready`` (running and logged in), ``not_running``, ``error``, or the login's state
    (``logged_out``, ``expired``, ``rejected``); the sentence says what is left to do, if anything.
    """
    from memmy_kb_client.desktop.control import ControlError, NotThisService, ServiceUnavailable, call

    try:
        status = call(state_dir, "GET", "/control/status", timeout=timeout)
    except NotThisService as err:
        return "error", f"{str(err)[:1].upper()}{str(err)[1:]}"
    except ServiceUnavailable:
        return "not_running", (
            f"No desktop service is running for {state_dir}: start it with `memmy-kb desktop serve`, "
            "then `memmy-kb desktop login`."
        )
    except ControlError as err:
        return (
            "error",
            f"The desktop service answered {err.status} {err.code}: see `memmy-kb desktop status`.",
        )
    login = status.get("login") or {}
    state = str(login.get("state"))
    where = f"The desktop service is running at {status.get('service')}"
    if state == "logged_in":
        user = f" as {login['user']}" if login.get("user") else ""
        return "ready", f"{where} and logged in{user}: the hook is ready."
    return state, f"{where}, but {LOGIN_STATES.get(state, state)}."

"""The running desktop service as a command or a hook finds it, in words: asked with the control client,
its login's state said with the command that mends it (``advice``). docs/desktop.md, "The local
service"."""

from __future__ import annotations

from memmy_kb_client.home.advice import command, how_to_start

_LOGIN_STATES = {
    "logged_in": "logged in",
    "logged_out": "logged out: run `{login}`",
    "expired": "the login has expired: run `{login}`",
    "rejected": "the cloud refused the login (401): run `{login}` again",
}


def login_state(state: str, home: str | None = None) -> str:
    """The login's state in words, naming ``desktop login`` as the person can run it (with ``home``, the
    service's ``MEMMY_KB_HOME`` when the person's shell may have another, such as the demo's)."""
    return _LOGIN_STATES.get(state, state).replace("{login}", command("desktop", "login", home=home))


def service_state(state_dir: str, timeout: float = 3.0) -> tuple[str, str]:
    """The desktop service as a hook would find it, asked of the running service: ``(state, sentence)``.

    ``state`` is ``ready`` (running and logged in), ``not_running``, ``error``, or the login's state
    (``logged_out``, ``expired``, ``rejected``); the sentence says what is left to do, if anything.
    """
    from memmy_kb_client.home.control import ControlError, NotThisService, ServiceUnavailable, call

    try:
        status = call(state_dir, "GET", "/control/status", timeout=timeout)
    except NotThisService as err:
        return "error", f"{str(err)[:1].upper()}{str(err)[1:]}"
    except ServiceUnavailable:
        return "not_running", (
            f"No desktop service is running for {state_dir}: {how_to_start(state_dir)}, "
            f"then `{command('desktop', 'login')}`."
        )
    except ControlError as err:
        return (
            "error",
            f"The desktop service answered {err.status} {err.code}: see `{command('desktop', 'status')}`.",
        )
    login = status.get("login") or {}
    state = str(login.get("state"))
    where = f"The desktop service is running at {status.get('service')}"
    if state == "logged_in":
        user = f" as {login['user']}" if login.get("user") else ""
        return "ready", f"{where} and logged in{user}: the hook is ready."
    return state, f"{where}, but {login_state(state)}."

"""The desktop service's state in words: what ``serve`` prints once it listens. The running service as a
command or a hook finds it is ``home.service_state``'s. Commands are named as the person can run them
(``advice``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memmy_kb_client.home.advice import command
from memmy_kb_client.home.service_state import login_state

if TYPE_CHECKING:
    from memmy_kb_client.desktop.server import DesktopService

READY_PREFIX = "Memmy desktop service on "


def describe(service: DesktopService, home: str | None = None) -> str:
    """What ``serve`` (and ``memmy-local up``) print once the service listens; the first line is
    machine-read. ``home`` as for ``login_state``: the commands named carry it."""
    status = service.state.status()
    login = status["login"]
    state = login["state"]
    logged = f"logged in as {login.get('user')}" if state == "logged_in" else login_state(state, home)
    lines = [
        f"{READY_PREFIX}{service.url} (cloud: {status['cloud']})",
        f"  state:  {service.config.state_dir}",
        f"  login:  {logged} ({status['credential_store']})",
        f"  hooks:  read {status['hook_token_file']}",
        f"  page:   `{command('desktop', 'open', home=home)}` (a one-time link to the knowledge-base page)",
    ]
    if status.get("warning"):
        lines.append(f"  note:   {status['warning']}")
    return "\n".join(lines)

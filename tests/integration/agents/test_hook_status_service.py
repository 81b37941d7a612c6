"""``hook install``'s message and ``hook status`` against the real local service (in-process, in front of
the fake cloud of ``test_desktop_service``): the message follows the service's login, and the hook's run
record follows what the service answered."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memmy_kb_client.agents import hook
from memmy_kb_client.agents.hook_status import install_message, render_status, status
from memmy_kb_client.desktop.server import DesktopService
from memmy_kb_client.home import paths
from memmy_kb_client.home.advice import command
from tests.support.desktop_service import (
    BLOCK,
    CLOUD_TOKEN,
    QUERY,
    Client,
    FakeCloud,
    serving,
    start,
)


@pytest.fixture
def fake_cloud() -> Iterator[FakeCloud]:
    yield from serving(FakeCloud())


@pytest.fixture
def running(tmp_path: Path, fake_cloud: FakeCloud, monkeypatch: pytest.MonkeyPatch) -> Iterator[Client]:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    service: DesktopService = start(tmp_path / "home" / "desktop", fake_cloud.url)
    yield Client(service)
    service.stop()


def env_of(client: Client) -> dict[str, str]:
    return {paths.HOME_ENV: str(client.state_dir.parent)}


def ask(client: Client, agent: str = "codex") -> bytes:
    out = io.BytesIO()
    event = json.dumps({"hook_event_name": hook.AGENTS[agent], "prompt": QUERY}).encode()
    hook.run(agent, io.BytesIO(event), out, env_of(client))
    return out.getvalue()


def test_the_message_follows_the_services_login(running):
    logged_out = install_message("codex", None, env_of(running))[0]
    assert logged_out.startswith(f"The desktop service is running at {running.service.url}, but logged out")
    assert f"`{command('desktop', 'login')}`" in logged_out  # as this shell can run it
    running.login(CLOUD_TOKEN)
    ready = install_message("codex", None, env_of(running))[0]
    assert (
        ready
        == f"The desktop service is running at {running.service.url} and logged in as alice: the hook is ready."
    )
    running.service.stop()
    stopped = install_message("codex", None, env_of(running))[0]
    assert stopped.startswith("No desktop service is running for ")


def test_the_run_record_follows_the_services_answer(running):
    from memmy_kb_client.agents.hook_install import apply, hook_command

    apply("codex", command=hook_command("codex", env_of(running)))
    assert ask(running) == b""
    row = {r["agent"]: r for r in status({})}["codex"]
    assert row["installed"] is True
    assert row["last_run"]["outcome"] == "logged_out"
    running.login(CLOUD_TOKEN)
    assert ask(running) == BLOCK.encode() + b"\n"
    row = {r["agent"]: r for r in status({})}["codex"]
    assert (row["last_run"]["outcome"], row["last_run"]["excerpts"]) == ("ok", 1)


def test_a_recall_past_the_accounts_limit_is_quiet_in_the_turn_and_explained_by_the_status(running, fake_cloud):
    from memmy_kb_client.agents.hook_install import apply, hook_command

    apply("codex", command=hook_command("codex", env_of(running)))
    running.login(CLOUD_TOKEN)
    fake_cloud.status = 429
    fake_cloud.body = {
        "error": {
            "code": "recall_rate_limited",
            "message": "Too many recalls for this account just now (at most 10 at once, then 2 a second).",
            "details": {"retry_after_seconds": 7},
        }
    }
    # The turn goes ahead with nothing injected, and the hook exits 0 as always
    out = io.BytesIO()
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": QUERY}).encode()
    assert hook.run("codex", io.BytesIO(event), out, env_of(running)) == 0
    assert out.getvalue() == b""
    # The run record keeps what happened and the cloud's wait; the status says it in words
    rows = status({})
    record = {r["agent"]: r for r in rows}["codex"]["last_run"]
    assert (record["outcome"], record["excerpts"], record["retry_after"]) == ("rate_limited", 0, 7)
    text = render_status(rows)
    assert "rate limited: your account asked the cloud for more recalls than its limit allows just now" in text
    assert "so this turn got no excerpts; the cloud asked to wait 7 s (excerpts again from " in text
    # The service's own status names the refusal too
    last = running.control("GET", "/control/status")[1]["last_recall"]
    assert (last["outcome"], last["status"], last["detail"]) == ("rate_limited", 429, "recall_rate_limited, retry after 7 s")

"""Advice names what the person can run as printed: ``memmy-kb`` when their shell finds this installation,
else the installed script's path; ``MEMMY_KB_HOME=…`` for a home that is not the default; and, when the
local stack ran the desktop service, the stack's own command to start it again."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from memmy_kb_client.home import advice, control, paths
from memmy_kb_client.home.service_state import service_state


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh checkout's virtualenv: the scripts in .venv/bin, which is not on PATH; run from the checkout."""
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "memmy-kb"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    monkeypatch.setattr(sys, "argv", [".venv/bin/memmy-kb", "desktop", "status"])
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    return bin_dir


def test_a_script_off_path_is_named_by_its_path_from_here(checkout: Path) -> None:
    assert advice.program() == ".venv/bin/memmy-kb"
    assert advice.command("desktop", "open") == ".venv/bin/memmy-kb desktop open"


def test_a_script_on_path_is_named_by_its_name(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(checkout))
    assert advice.program() == "memmy-kb"
    # A link to it on PATH (pipx, make install-cli) is the same installation
    linked = checkout.parent.parent / "bin"
    linked.mkdir()
    (linked / "memmy-kb").symlink_to(checkout / "memmy-kb")
    monkeypatch.setenv("PATH", str(linked))
    assert advice.program() == "memmy-kb"


def test_another_installation_on_path_is_not_this_one(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = checkout.parent.parent / "other"
    other.mkdir()
    (other / "memmy-kb").write_text("#!/bin/sh\n")
    (other / "memmy-kb").chmod(0o755)
    monkeypatch.setenv("PATH", str(other))
    assert advice.program() == ".venv/bin/memmy-kb"


def test_from_another_directory_the_path_is_absolute(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = checkout.parent.parent / "work"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setattr(sys, "argv", [str(checkout / "memmy-kb")])
    assert advice.program() == str(checkout / "memmy-kb")


def test_a_home_other_than_the_default_is_named_with_the_command(checkout: Path, tmp_path: Path) -> None:
    demo = tmp_path / "home with space" / "demo"
    assert advice.command("desktop", "open", home=str(demo)) == (
        f"MEMMY_KB_HOME='{demo}' .venv/bin/memmy-kb desktop open"
    )
    assert advice.command("desktop", "open", home=advice.default_home()) == ".venv/bin/memmy-kb desktop open"


def test_the_local_stack_is_named_to_start_its_service_again(checkout: Path, tmp_path: Path) -> None:
    state_dir = str(tmp_path / "home" / "desktop")
    assert advice.how_to_start(state_dir) == "start it with `.venv/bin/memmy-kb desktop serve`"

    advice.record_launcher(state_dir, advice.Launcher("make run ARGS=--demo", "/src/memmy"))
    assert advice.how_to_start(state_dir) == "start it with `make run ARGS=--demo` (in /src/memmy)"
    record = Path(paths.private_dir(state_dir)) / advice.LAUNCHER_FILE
    assert oct(record.stat().st_mode & 0o777) == "0o600"
    # `desktop status` and the hooks' status say so when no service answers
    with pytest.raises(control.ServiceUnavailable, match=r"start it with `make run ARGS=--demo` \(in /src/memmy\)"):
        control.call(state_dir, "GET", "/control/status")
    state, sentence = service_state(state_dir)
    assert state == "not_running"
    assert "`make run ARGS=--demo` (in /src/memmy), then `.venv/bin/memmy-kb desktop login`" in sentence

    # `desktop serve` forgets it; a record that is not ours is ignored
    advice.record_launcher(state_dir, None)
    assert advice.how_to_start(state_dir) == "start it with `.venv/bin/memmy-kb desktop serve`"
    for bad in ({"command": "rm -rf ~\n", "directory": "/"}, {"command": 3, "directory": "/"}, ["make run"]):
        record.write_text(json.dumps(bad))
        assert advice.read_launcher(state_dir) is None


def test_the_record_lives_apart_from_what_an_agent_may_write(checkout: Path, tmp_path: Path) -> None:
    state_dir = tmp_path / "home" / "desktop"
    advice.record_launcher(str(state_dir), advice.Launcher("make run", "/src"))
    assert not state_dir.exists() or advice.LAUNCHER_FILE not in os.listdir(state_dir)
    assert (tmp_path / "home" / paths.PRIVATE_DIR / advice.LAUNCHER_FILE).exists()

"""``make install-cli`` puts ``memmy-kb`` on PATH with pipx when it is there, else with uv, else says how:
run with stand-ins for pipx and uv that record their arguments (neither is needed to run this test), on a
PATH that holds nothing else."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[3]
MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None, reason="needs make, as the README's commands do")


def stand_in(bin_dir: Path, name: str, log: Path) -> None:
    script = bin_dir / name
    script.write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\n')
    script.chmod(0o755)


def install_cli(bin_dir: Path) -> subprocess.CompletedProcess[str]:
    assert MAKE is not None
    return subprocess.run(  # noqa: S603 - make with our Makefile
        [MAKE, "-s", "-C", str(REPOSITORY), "install-cli"],
        capture_output=True,
        text=True,
        env={"PATH": str(bin_dir)},
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("present", "ran"),
    [
        (["pipx", "uv"], ["pipx install --force ./client[desktop,mcp]", "pipx ensurepath"]),
        (["uv"], ["uv tool install --force ./client[desktop,mcp]", "uv tool update-shell"]),
    ],
    ids=["pipx first", "uv else"],
)
def test_the_client_is_installed_with_pipx_else_uv(
    tmp_path: Path, present: list[str], ran: list[str]
) -> None:
    log = tmp_path / "ran.log"
    for name in present:
        stand_in(tmp_path, name, log)
    done = install_cli(tmp_path)
    assert done.returncode == 0, done.stderr
    assert log.read_text().splitlines() == ran


def test_without_either_it_names_both_ways(tmp_path: Path) -> None:
    done = install_cli(tmp_path)
    assert done.returncode != 0
    assert "neither is installed" in done.stderr
    assert "pipx install './client[desktop,mcp]'" in done.stderr
    assert "uv tool install './client[desktop,mcp]'" in done.stderr

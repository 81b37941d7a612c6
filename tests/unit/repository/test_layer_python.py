"""Without a Python 3.12 for the layer's bytecode, one line says so and how to get one: the layer's
Makefile words it (``print-python`` on stderr), ``make test``/``make unit`` print it first, and
test_layer_build.py is skipped with it as the reason instead of failing to build."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]


def _make(*target: str, python312: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own Makefiles
        ["make", "-s", "--no-print-directory", *target],  # noqa: S607
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHON312": python312},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_python312_that_is_none_is_refused_in_one_line_saying_how_to_get_one(tmp_path: Path) -> None:
    done = _make("-C", "layers/core/python", "print-python", python312=str(tmp_path / "python3.12"))

    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
    assert "is not a Python 3.12" in done.stderr
    assert "PYTHON312=/path/to/python3.12" in done.stderr
    assert "pyenv install 3.12" in done.stderr


def test_the_layer_build_stops_with_that_line(tmp_path: Path) -> None:
    done = _make(
        "-C",
        "layers/core/python",
        "build-CoreLayer",
        f"ARTIFACTS_DIR={tmp_path / 'out'}",
        python312=str(tmp_path / "python3.12"),
    )

    assert done.returncode == 2
    assert done.stderr.splitlines()[0].endswith("where it has one")
    assert not (tmp_path / "out").exists()


def test_make_test_says_first_that_the_layer_tests_are_skipped(tmp_path: Path) -> None:
    done = _make("layer-python", python312=str(tmp_path / "python3.12"))

    (line,) = done.stdout.splitlines()
    assert line.startswith("note: skipping the layer-bytecode tests (tests/unit/repository/test_layer_build.py): ")
    assert "PYTHON312=/path/to/python3.12" in line

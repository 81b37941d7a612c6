"""``pip install ./client`` in a fresh virtual environment, as a desktop user installs the client: it brings
httpx and nothing of the cloud side (no boto3, moto, Powertools or pydantic), ``memmy-kb`` and the hook run,
the page's files are in the package, and ``memmy-kb dev`` says how to install the local stack instead of failing
with a traceback.

One test, so the environment is built once (about 10-40 s: pip resolves the client's pinned dependencies
from its cache or the package index).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
CLIENT = REPO_ROOT / "client"
ABSENT = {"boto3", "botocore", "moto", "aws-lambda-powertools", "pydantic", "memmy-kb-service"}


def _venv(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    try:
        subprocess.run(  # noqa: S603 - the running interpreter's own venv module
            [sys.executable, "-m", "venv", str(venv)], capture_output=True, timeout=120, check=True
        )
    except (subprocess.CalledProcessError, OSError) as err:
        pytest.skip(f"no virtual environment can be created here ({err})")
    return venv


def test_the_client_installs_and_runs_alone_in_a_fresh_venv(tmp_path: Path) -> None:
    # Given a copy of client/ (pip builds in its source tree; the checkout stays clean)
    source = tmp_path / "client"
    shutil.copytree(CLIENT, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    venv = _venv(tmp_path)
    python, script = venv / "bin" / "python", venv / "bin" / "memmy-kb"
    # Nothing of this checkout or the test's own environment on the path, a home of its own.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env |= {"MEMMY_KB_HOME": str(tmp_path / "home"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}

    def run(*command: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # noqa: S603 - the venv's own pip and scripts
            [str(part) for part in command],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=timeout,
            check=False,
        )

    # When it is installed with its dependencies
    installed = run(python, "-m", "pip", "install", "--quiet", source, timeout=300)
    assert installed.returncode == 0, installed.stderr[-4000:]

    # Then it brings httpx and none of the cloud side
    listed = run(python, "-m", "pip", "list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    names = {entry["name"].lower() for entry in json.loads(listed.stdout)}
    assert {"memmy-kb", "httpx", "wcwidth"} <= names
    assert not names & ABSENT, sorted(names & ABSENT)

    # And its command works
    helped = run(script, "--help")
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: memmy-kb")
    for command in ("kb", "files", "recall", "hook", "desktop", "dev"):
        assert command in helped.stdout
    desktop_help = run(script, "desktop", "serve", "--help")
    assert desktop_help.returncode == 0, desktop_help.stderr

    # And the hook runs from it (the home's plumbing packaged too): with no service, nothing printed, exit 0,
    # and its run recorded
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "差旅报销"})
    hook = subprocess.run(  # noqa: S603 - the venv's own script
        [str(script), "hook", "codex"], input=event, capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert (hook.returncode, hook.stdout, hook.stderr) == (0, "", "")
    record = json.loads((tmp_path / "home" / "desktop" / "hook-last-codex.json").read_text())
    assert record["outcome"] == "no_service"

    # And the desktop page's files were packaged with it
    page = run(
        python,
        "-c",
        "from importlib import resources; import memmy_kb_client.desktop.server; "
        "print(resources.files('memmy_kb_client.desktop').joinpath('static/index.html').is_file())",
    )
    assert page.stdout.strip() == "True", page.stderr

    # And `memmy-kb mcp` without the mcp extra says how to get the SDK: no traceback, exit 2
    mcp = run(script, "mcp")
    assert mcp.returncode == 2, mcp.stderr
    assert "install the client with its mcp extra" in mcp.stderr
    assert "Traceback" not in mcp.stderr, mcp.stderr

    # And `memmy-kb dev` says how to get the local stack: no traceback, a non-zero exit
    for args in (["dev", "--help"], ["dev", "up"]):
        dev = run(script, *args)
        assert dev.returncode != 0, dev.stdout
        assert "install the local stack (make run / pip install -e .[local])" in dev.stderr
        assert "Traceback" not in dev.stderr, dev.stderr

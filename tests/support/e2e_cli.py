"""The installed ``memmy-kb`` run against the stage with a token, as a script runs it, for the e2e tests."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from tests.support.stack import CLI
from tests.support.stage import ApiTarget


def cli(stack: ApiTarget, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed CLI as a script runs it: stdin is not a terminal (so rm needs --yes)."""
    env = {
        **os.environ,
        "MEMMY_KB_ENDPOINT": stack.api_url,
        "MEMMY_KB_TOKEN": token,
        "MEMMY_KB_HOME": "/nonexistent",
    }
    return subprocess.run(  # noqa: S603 - our own CLI
        [*CLI, *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


def ok_json(stack: ApiTarget, token: str, *args: str) -> Any:
    done = cli(stack, token, *args, "--json")
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return json.loads(done.stdout)

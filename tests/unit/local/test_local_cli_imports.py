"""What ``memmy-local --help`` and ``memmy-local token`` load: the CLI and the signing key's code, not the
stack. ``memmy_local.cli`` and ``memmy_local.home_commands`` import moto, boto3, the core, the handlers and
the emulator inside the commands that run them (``up``, ``reconcile``, ``memos``), so help answers at once
and a script that signs a token per call does not pay for the stack each time (docs/architecture.md,
"Import time: the hot paths"). Checked in a fresh interpreter, where no other test has imported anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_REPORT = """
import json, sys
from memmy_local.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""

# Loaded by the commands that need them, never by help or token.
LAZY = {
    "moto": "the local AWS services: `up` starts them",
    "boto3": "AWS clients: `up` and `reconcile`",
    "botocore": "AWS clients: `up` and `reconcile`",
    "httpx": "`reconcile` asks the running stack's control port",
    "memmy_kb": "the core and its handlers: `up`",
    "functions": "the handlers: `up`",
    "jieba": "the MemOS emulator's segmentation: `up` and `memos`",
    "memmy_local.stack": "the stack itself: `up`",
    "memmy_local.gateway": "the API gateway: `up`",
    "memmy_local.memos_emulator": "the MemOS emulator: `up` and `memos`",
    "memmy_local.lambdas": "the functions in-process: `up`",
    "memmy_local.aws": "moto and its patches: `up`",
}


def _loaded(args: list[str], home: Path) -> set[str]:
    done = subprocess.run(  # noqa: S603 - our own snippet, run by this interpreter
        [sys.executable, "-c", _REPORT, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "MEMMY_KB_HOME": str(home)},
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def _lazy_ones_loaded(modules: set[str]) -> dict[str, str]:
    return {
        name: why
        for name, why in LAZY.items()
        if any(module == name or module.startswith(f"{name}.") for module in modules)
    }


@pytest.mark.parametrize(
    ("args", "ran"),
    [(["--help"], "memmy_local.cli"), (["token", "alice"], "memmy_local.tokens")],
    ids=["help", "token"],
)
def test_help_and_token_load_none_of_the_stack(tmp_path: Path, args: list[str], ran: str) -> None:
    modules = _loaded(args, tmp_path)

    assert _lazy_ones_loaded(modules) == {}
    assert {"memmy_local.cli", ran} <= modules  # the report saw the command run


def test_a_lazy_module_is_found_by_its_package_or_any_module_under_it() -> None:
    assert _lazy_ones_loaded({"memmy_local.cli", "memmy_local.stack"}) == {"memmy_local.stack": LAZY["memmy_local.stack"]}
    assert set(_lazy_ones_loaded({"botocore.client", "memmy_kb.records"})) == {"botocore", "memmy_kb"}
    assert _lazy_ones_loaded({"memmy_kb_client.cli", "memmy_local.stacks_of_paper"}) == {}

"""The client stands on its own: no module of ``memmy_kb_client`` imports the cloud core, the local stack or
the AWS libraries, neither at import time (a fresh interpreter's ``sys.modules``) nor lazily inside a
function (its source's import statements), so ``pip install ./client`` alone is enough to run it. How its
parts import one another: tests/unit/repository/test_client_layers.py."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

CLIENT_SOURCE = Path(__file__).resolve().parents[3] / "client" / "memmy_kb_client"
# Top-level names the client may never load: the core layer, the local stack, and what only they need.
FORBIDDEN = {"memmy_kb", "memmy_local", "moto", "boto3", "botocore", "aws_lambda_powertools", "pydantic"}
# What a user runs: the console script, the CLI, the hook before every turn, the desktop service.
ENTRY_MODULES = [
    "memmy_kb_client.entry",
    "memmy_kb_client.cli.main",
    "memmy_kb_client.agents.hook",
    "memmy_kb_client.agents.hook_install",
    "memmy_kb_client.desktop.server",
]

_LOADED_AFTER_IMPORTS = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(sys.modules)))
"""


def _client_modules() -> list[str]:
    return sorted(
        ".".join(("memmy_kb_client", *path.relative_to(CLIENT_SOURCE).with_suffix("").parts)).removesuffix(
            ".__init__"
        )
        for path in CLIENT_SOURCE.rglob("*.py")
    )


def _loaded_after_importing(modules: list[str]) -> set[str]:
    # -I: neither the working directory nor PYTHONPATH on sys.path, as when the console script runs.
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-I", "-c", _LOADED_AFTER_IMPORTS, *modules],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(json.loads(done.stdout))


def _top_level(names: set[str]) -> set[str]:
    return {name.split(".")[0] for name in names}


def test_the_entry_points_load_nothing_of_the_core_the_local_stack_or_aws() -> None:
    loaded = _loaded_after_importing(ENTRY_MODULES)

    assert set(ENTRY_MODULES) <= loaded
    assert not _top_level(loaded) & FORBIDDEN, sorted(
        name for name in loaded if name.split(".")[0] in FORBIDDEN
    )


def test_every_client_module_imports_and_loads_nothing_forbidden() -> None:
    modules = _client_modules()
    assert "memmy_kb_client.home.credentials" in modules

    loaded = _loaded_after_importing(modules)

    assert not _top_level(loaded) & FORBIDDEN, sorted(
        name for name in loaded if name.split(".")[0] in FORBIDDEN
    )


def test_no_client_source_names_a_forbidden_module_even_inside_a_function() -> None:
    found = []
    for path in sorted(CLIENT_SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            found += [
                f"{path.name}:{node.lineno} {name}" for name in names if name.split(".")[0] in FORBIDDEN
            ]

    assert found == []

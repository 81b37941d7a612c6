"""``make e2e-stage``'s path, as an operator takes it against a fresh deploy: a stack started on its own
(here ``memmy-local up`` in another process), ``MEMMY_KB_E2E_URL`` at its API, a token command (here
``memmy-local token`` with its home) making the run's people, and a few e2e tests run by pytest in a
process of their own. The stage test runs against that stack only through its API, the local-only test is
skipped with its reason, and the run deletes the KBs it made.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memmy_local.lambdas.handlers import repo_root
from tests.support.stack import LOCAL_CLI, RunningStack, start_stack, stop_stack
from tests.support.stage import RUN_ENV, TOKEN_COMMAND_ENV, URL_ENV

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local_stack("it starts the stage a deployed one stands for"),
]

# One test that makes a KB and leaves it, one that needs the local stack's signer.
SUBSET = [
    "tests/e2e/test_knowledge_bases_e2e.py::test_the_cli_creates_and_lists",
    "tests/e2e/test_knowledge_bases_e2e.py::test_expired_and_foreign_tokens_are_refused",
]


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    process, stack = start_stack(tmp_path_factory.mktemp("deployed"))
    try:
        yield stack
    finally:
        stop_stack(process)


def token_command(stack: RunningStack, workdir: Path) -> tuple[str, Path]:
    """The operator's token command for ``stack`` (``memmy-local token`` with its home), logging each
    user name it is asked for."""
    log = workdir / "asked.txt"
    script = workdir / "token.sh"
    memmy_local = " ".join(LOCAL_CLI)
    script.write_text(
        f'#!/bin/sh\necho "$1" >> {log}\nexec {memmy_local} token --data-dir {stack.key_path.parent} "$@"\n'
    )
    script.chmod(0o755)
    return str(script), log


def test_the_e2e_tier_runs_against_a_stack_it_did_not_start(deployed: RunningStack, tmp_path: Path) -> None:
    command, asked = token_command(deployed, tmp_path)
    run = uuid.uuid4().hex[:8]
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("MEMMY_KB_E2E_", "PYTEST_"))},
        URL_ENV: deployed.api_url + "/",  # as the ApiUrl output spells it
        TOKEN_COMMAND_ENV: command,
        RUN_ENV: run,
    }
    pytest_args = ["-p", "no:cacheprovider", "-n", "0", "-q", "-rs", "--basetemp", str(tmp_path / "basetemp")]
    done = subprocess.run(  # noqa: S603 - pytest on our own tests
        [sys.executable, "-m", "pytest", *pytest_args, *SUBSET],
        capture_output=True,
        text=True,
        env=env,
        cwd=repo_root(),
        timeout=300,
        check=False,
    )
    output = done.stdout[-4000:] + done.stderr[-2000:]

    # One test passed against the stack, the other was skipped as the local stack's, saying why
    assert done.returncode == 0, output
    assert re.search(r"\b1 passed, 1 skipped\b", done.stdout), output
    assert "local stack only (MEMMY_KB_E2E_URL is set): an expired token" in done.stdout, output
    # The run's person came from the token command, under the run's name
    (person,) = set(asked.read_text().split())
    assert person.startswith(f"memmy-e2e-{run}-cli-"), person
    # It reached the stack through its API: the KB it made, then the run's clean-up deleting it
    log = deployed.log()
    assert re.search(r"POST /knowledge-bases 201 ", log), log[-3000:]
    assert re.search(r"DELETE /knowledge-bases/\S+ 202 ", log), log[-3000:]
    headers = {"Authorization": f"Bearer {deployed.token(person)}"}
    assert httpx.get(f"{deployed.api_url}/knowledge-bases", headers=headers, timeout=10).json() == {
        "items": []
    }

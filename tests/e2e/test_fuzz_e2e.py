"""Schema-driven fuzzing of the running local stack: every route, generated and mutated requests, no 5xx,
every answer in the documented status codes and schemas (docs/openapi.json).

Bounded for ``make test`` (``FUZZ_EXAMPLES``, default 20 per operation, fixed seed so CI time is stable);
``make fuzz`` runs it longer. Loopback only: the target is the stack this session started.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memmy_local.handlers import repo_root
from tests.support.stack import RunningStack

pytestmark = pytest.mark.e2e

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


def test_no_generated_request_gets_a_5xx_or_an_undocumented_answer(local_stack: RunningStack, tmp_path: Path) -> None:
    assert local_stack.api_url.startswith("http://127.0.0.1:")
    token = local_stack.token("fuzzer", name="Fuzzer", email="fuzzer@example.com")
    examples = os.environ.get("FUZZ_EXAMPLES", "20")
    command = [
        str(SCHEMATHESIS),
        "run",
        str(repo_root() / "docs" / "openapi.json"),
        "--url",
        local_stack.api_url,
        "-H",
        f"Authorization: Bearer {token}",
        "--max-examples",
        examples,
        "--seed",
        os.environ.get("FUZZ_SEED", "20261201"),
        "--checks",
        "not_a_server_error,response_schema_conformance,status_code_conformance",
        "--phases",
        "coverage,fuzzing",
    ]
    done = subprocess.run(  # noqa: S603 - our own fuzzer against our own stack
        command, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path, env={**os.environ, "NO_COLOR": "1"}
    )
    summary = done.stdout[-3000:]
    assert done.returncode == 0, summary
    generated = re.search(r"(\d+) generated, (\d+) passed", done.stdout)
    assert generated, summary
    assert int(generated.group(1)) == int(generated.group(2)) > 100
    print(f"fuzz: {generated.group(0)}, 0 server errors")

"""Schema-driven fuzzing of the running local stack: every route, generated and mutated requests, no 5xx,
every answer in the documented status codes and schemas (docs/openapi.json).

Before fuzzing, real ids are seeded through the API (``tests.support.fuzzing``): a KB the fuzzing user
owns with folders, a file and a reader, a KB shared with it, and KBs, folders and files kept for the
operations that delete. Schemathesis draws path ids and id-like body fields from them most of the time, so
the operations reach their 2xx answers instead of mostly 404; the per-operation count of 2xx answers is
printed (``make fuzz`` shows it). Each JSON body goes out under each spelling of its media type in turn
(``tests.support.fuzz_hooks``: ``Application/JSON; Charset=UTF-8`` is JSON too).

Bounded for ``make test`` (``FUZZ_EXAMPLES``, default 15 per operation, fixed seed so CI time is stable:
seeded requests do real work, so 15 take about as long as 20 unseeded ones did); ``make fuzz`` runs it
longer. Loopback only: the target is the stack this session started.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memmy_local.lambdas.handlers import repo_root
from tests.support import fuzz_hooks
from tests.support.fuzzing import (
    format_tally,
    media_types_sent,
    schemathesis_config,
    seed_fuzz_targets,
    successes_by_operation,
)
from tests.support.stack import RunningStack

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local_stack("generated requests on every route, for loopback only"),
]

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
# With seeds, most operations must reach a 2xx; a few need luck in a short run (sharing an account that
# is not yet a member, deleting before another request did).
MIN_OPERATIONS_WITH_2XX = 0.75


def test_no_generated_request_gets_a_5xx_or_an_undocumented_answer(local_stack: RunningStack, tmp_path: Path) -> None:
    # Given the committed OpenAPI document and a stack seeded with KBs, files and a token to fuzz with
    assert local_stack.api_url.startswith("http://127.0.0.1:")
    schema_path = repo_root() / "docs" / "openapi.json"
    schema = json.loads(schema_path.read_text())
    started = time.monotonic()
    seeds = seed_fuzz_targets(local_stack)
    seeded_in = time.monotonic() - started
    config = tmp_path / "schemathesis.toml"
    config.write_text(schemathesis_config(schema, seeds))
    har = tmp_path / "fuzz.har"
    examples = os.environ.get("FUZZ_EXAMPLES", "15")
    command = [
        str(SCHEMATHESIS),
        "--config-file",
        str(config),
        "run",
        str(schema_path),
        "--url",
        local_stack.api_url,
        "-H",
        f"Authorization: Bearer {seeds.token}",
        "--max-examples",
        examples,
        "--seed",
        os.environ.get("FUZZ_SEED", "20261201"),
        "--checks",
        "not_a_server_error,response_schema_conformance,status_code_conformance",
        "--phases",
        "coverage,fuzzing",
        "--report",
        "har",
        "--report-har-path",
        str(har),
    ]
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "SCHEMATHESIS_HOOKS": fuzz_hooks.__file__,
        fuzz_hooks.KEEP_ENV: ",".join([*seeds.kb_ids, *seeds.scratch_kb_ids]),
    }
    # When schemathesis sends what it generates from the schema
    done = subprocess.run(  # noqa: S603 - our own fuzzer against our own stack
        command, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path, env=env
    )
    # Then no answer is a 5xx or off the schema, and most operations answered 2xx at least once
    summary = done.stdout[-3000:]
    assert done.returncode == 0, summary
    generated = re.search(r"(\d+) generated, (\d+) passed", done.stdout)
    assert generated, summary
    assert int(generated.group(1)) == int(generated.group(2)) > 100
    tally = successes_by_operation(har, schema)
    # Every spelling of the JSON type went out, and none was a 5xx (the checks above)
    assert set(fuzz_hooks.JSON_SPELLINGS) <= media_types_sent(har)
    print(
        f"fuzz: {generated.group(0)}, 0 server errors; seeded in {seeded_in:.1f} s, "
        f"fuzzed in {time.monotonic() - started - seeded_in:.1f} s; 2xx answers per operation:\n{format_tally(tally)}"
    )
    reached = [operation for operation, (ok, _) in tally.items() if ok]
    assert len(reached) >= MIN_OPERATIONS_WITH_2XX * len(tally), format_tally(tally)

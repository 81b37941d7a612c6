"""The garbage collector held off for a Lambda cold start and released after the first invocation."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memmy_kb import cold_start


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    yield
    cold_start._held = False
    gc.unfreeze()
    gc.enable()


def test_outside_lambda_the_collector_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_EXECUTION_ENV", raising=False)
    assert cold_start.hold() is False
    assert gc.isenabled()


def test_in_lambda_the_collector_is_off_until_the_first_invocation_returns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_EXECUTION_ENV", "AWS_Lambda_python3.12")
    seen = []
    handler = cold_start.until_first_invocation(lambda event: seen.append(gc.isenabled()) or "ok")

    assert cold_start.hold() is True
    assert not gc.isenabled()
    assert handler({}) == "ok"
    assert seen == [False]  # the first invocation ran with the collector off
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0  # what the cold start built is never walked again
    handler({})
    assert seen == [False, True]


def test_a_failing_first_invocation_releases_the_collector_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_EXECUTION_ENV", "AWS_Lambda_python3.12")

    @cold_start.until_first_invocation
    def handler(event: object) -> None:
        raise RuntimeError("boom")

    cold_start.hold()
    with pytest.raises(RuntimeError):
        handler({})
    assert gc.isenabled()


# The mcp handler, in a fresh interpreter as Lambda loads it: its import holds the collector, its first
# invocation (here the protected-resource metadata, which reads only the settings) releases it.
MCP_COLD_START = """
import gc
from functions.mcp import app
from tests.support.events import FakeLambdaContext
assert not gc.isenabled(), "the import left the collector on"
event = {"routeKey": "GET /.well-known/oauth-protected-resource/mcp", "headers": {},
         "requestContext": {"domainName": "memmy.example"}}
assert app.lambda_handler(event, FakeLambdaContext(function_name="mcp"))["statusCode"] == 200
assert gc.isenabled() and gc.get_freeze_count() > 0, "the first invocation did not release the collector"
"""


def test_the_mcp_handler_holds_the_collector_until_its_first_invocation() -> None:
    environment = {
        **os.environ,
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
        "TABLE_NAME": "memmy-test",
        "MCP_TOKEN_ISSUER": "https://issuer.example",
        "POWERTOOLS_METRICS_DISABLED": "true",
    }
    done = subprocess.run(  # noqa: S603 - our own snippet
        [sys.executable, "-c", MCP_COLD_START],
        cwd=Path(__file__).resolve().parents[3],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr

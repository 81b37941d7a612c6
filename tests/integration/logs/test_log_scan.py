"""The log-hygiene check's footing: its scanner finds a secret planted in each form through each channel
and flags nothing that may be logged; and the logging settings it relies on: the event is never logged,
and the libraries' loggers are pinned whatever the root logger's level."""


from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from typing import Any

import pytest
from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging import correlation_paths

from memmy_kb import observability
from tests.support.events import FakeLambdaContext, claims_for, http_event
from tests.support.log_scan import Line, LogCapture, capture_logs, encodings, report, scan

__all__ = ["capture_logs"]  # the fixture: every log line a function writes, captured

QUESTION = "MemOS 开源版和商业版有什么区别"
READER_EMAIL = "xiaowang.sales@example.com"


# Secrets of each kind the story hands the service, planted in a log line in each form.
PLANTED = {
    "key": "mk-live-4f2c9a7e1b0d",
    "question": "开源版和商业版有什么区别",
    "email": "xiaowang.sales@example.com",
    "phone": "+8613912345678",
    "file text": 'It\'s the "Q3" target:\n一千二百万元/季度 & more',
}
ENCODINGS = list(encodings("x"))


def plant(channel: str, text: str) -> None:
    if channel == "powertools":
        observability.logger.warning("planted", extra={"detail": f"before {text} after"})
    elif channel == "stdlib":
        logging.getLogger("botocore.parsers").warning("Response body:\n%s", f"before {text} after")
    else:
        print(f"before {text} after")


@pytest.mark.parametrize("channel", ["powertools", "stdlib", "stdout"])
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_the_scan_finds_a_secret_planted_in_each_form(
    capture_logs: LogCapture, encoding: str, channel: str
) -> None:
    # Given each kind of secret, encoded, logged through each channel (which may escape it again)
    for secret in PLANTED.values():
        with capture_logs.running(channel):
            plant(channel, encodings(secret)[encoding])

    # Then the scan finds every one of them, each in its own line
    assert len(capture_logs.lines) == len(PLANTED)
    leaks = scan(capture_logs.lines, PLANTED)
    assert sorted(leak.secret for leak in leaks) == sorted(PLANTED), report(leaks)


def test_the_scan_does_not_flag_what_may_be_logged() -> None:
    # Masked contacts, ids and counts are not the secrets they stand for.
    clean = [
        Line("recall", "powertools", '{"message":"recall done","scope_size":1,"contact":"139****5678"}'),
        Line("share", "powertools", '{"owner":{"contact":"x***@example.com"},"kb_id":"kb_1"}'),
    ]
    assert scan(clean, PLANTED) == []


def test_the_event_is_never_logged(capture_logs: LogCapture, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given event logging asked for, by the environment and by the decorator
    monkeypatch.setenv("POWERTOOLS_LOGGER_LOG_EVENT", "true")
    bearer = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.cGxhbnRlZC1zaWduYXR1cmUtMTIzNDU2"
    secrets = {"bearer token": bearer, "question": QUESTION, "email": READER_EMAIL}
    event = http_event(
        "POST",
        "/recall",
        headers={"Authorization": f"Bearer {bearer}"},
        body={"query": QUESTION},
        claims=claims_for("planted", email=READER_EMAIL),
    )

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        observability.logger.info("handled")
        return {}

    ours = [
        observability.logger.inject_lambda_context(handler),
        observability.logger.inject_lambda_context(log_event=True)(handler),
        observability.logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)(
            handler
        ),
    ]
    with capture_logs.running("ours"):
        for decorated in ours:
            decorated(event, FakeLambdaContext())

    # Then only the handler's own line is logged, and nothing of the event
    assert [line.function for line in capture_logs.lines] == ["ours"] * len(ours)
    assert scan(capture_logs.lines, secrets) == []

    # ...where Powertools' own Logger, on the same stream, logs the event with all of it
    stock = Logger(service=observability.logger.service)
    with capture_logs.running("stock"):
        stock.inject_lambda_context(handler)(event, FakeLambdaContext())
    stock_lines = [line for line in capture_logs.lines if line.function == "stock"]
    assert {leak.secret for leak in scan(stock_lines, secrets)} == set(secrets)


def test_library_loggers_are_pinned_whatever_the_root_level() -> None:
    # As on Lambda: the runtime sets the root logger to AWS_LAMBDA_LOG_LEVEL before importing the handler.
    names = [
        "botocore.parsers",
        "botocore.endpoint",
        "botocore.auth",
        "botocore.credentials",
        "boto3.resources.action",
        "s3transfer.tasks",
        "urllib3.connectionpool",
        "httpcore.http11",
        "httpx",
        "aws_xray_sdk.core.emitters",
    ]
    code = (
        "import json, logging\n"
        "logging.getLogger().setLevel(logging.DEBUG)\n"
        "import memmy_kb.observability\n"
        f"print(json.dumps({{n: logging.getLogger(n).getEffectiveLevel() for n in {names!r}}}))\n"
    )
    env = {**os.environ, "AWS_LAMBDA_LOG_LEVEL": "DEBUG", "POWERTOOLS_LOG_LEVEL": "DEBUG"}
    done = subprocess.run(  # noqa: S603 - our own interpreter and code
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr

    levels = json.loads(done.stdout.strip().splitlines()[-1])
    expected = {name: observability.QUIET_LIBRARY_LOGGERS[name.split(".")[0]] for name in names}
    assert levels == expected
    assert min(levels.values()) >= logging.INFO

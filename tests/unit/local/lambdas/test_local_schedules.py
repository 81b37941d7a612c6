"""Schedules in the local stack: the template's Schedule/ScheduleV2 events, the timer, the control endpoint
and ``memmy-local reconcile`` (no AWS: functions are fakes)."""

from __future__ import annotations

import json
import stat
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from memmy_local.cli import main
from memmy_local.control import TOKEN_HEADER, ControlServer, read_state, state_file
from memmy_local.lambdas.runners import ScheduleRunner, ScheduleSource, schedule_event, schedule_sources
from memmy_local.template import TEMPLATE_PATH, load_template
from tests.support.polling import wait_until

REFS = {"AWS::StackName": "memmy-local", "AWS::AccountId": "123456789012"}


class FakeFunction:
    timeout_s = 1.0

    def __init__(self, result: Any = None, error: Exception | None = None) -> None:
        self.result = {"reconciled": 0} if result is None else result
        self.error = error
        self.events: list[Any] = []
        self.called = threading.Event()

    def invoke(self, event: Any, request_id: str | None = None) -> Any:
        self.events.append(event)
        self.called.set()
        if self.error is not None:
            raise self.error
        return self.result


class FakePool:
    def __init__(self, **functions: FakeFunction) -> None:
        self.functions = functions
        self.loaded: list[str] = []

    def get(self, logical_id: str) -> FakeFunction:
        self.loaded.append(logical_id)
        return self.functions[logical_id]


def source(function: str = "ReconcileFunction", **overrides: Any) -> ScheduleSource:
    values: dict[str, Any] = {
        "function": function,
        "event_id": "Schedule",
        "kind": "ScheduleV2",
        "expression": "rate(5 minutes)",
        "name": f"{function}Schedule",
        "input": None,
        "enabled": True,
    }
    return ScheduleSource(**{**values, **overrides})


# ---------------------------------------------------------------------------------------- the template


def test_the_reconcile_schedule_is_read_from_the_template() -> None:
    assert schedule_sources(load_template(TEMPLATE_PATH), REFS) == [source()]


def test_schedule_events_of_both_kinds_with_input_names_and_states() -> None:
    # Given a function with a Schedule, a ScheduleV2 with a name and an input, and an HTTP event
    template = {
        "Resources": {
            "Nightly": {
                "Type": "AWS::Serverless::Function",
                "Properties": {
                    "Events": {
                        "Rule": {
                            "Type": "Schedule",
                            "Properties": {"Schedule": "cron(0 3 * * ? *)", "Enabled": False},
                        },
                        "Named": {
                            "Type": "ScheduleV2",
                            "Properties": {
                                "ScheduleExpression": "rate(1 hour)",
                                "Name": {"Fn::Sub": "${AWS::StackName}-hourly"},
                                "Input": '{"mode": "full"}',
                            },
                        },
                        "Api": {"Type": "HttpApi", "Properties": {"Method": "GET", "Path": "/x"}},
                    }
                },
            }
        }
    }

    # When its schedules are read
    rule, named = schedule_sources(template, REFS)

    # Then both, and only they, with their names, expressions and states
    assert (rule.kind, rule.expression, rule.name, rule.enabled) == (
        "Schedule",
        "cron(0 3 * * ? *)",
        "NightlyRule",
        False,
    )
    assert (named.kind, named.name, named.input, named.enabled) == (
        "ScheduleV2",
        "memmy-local-hourly",
        '{"mode": "full"}',
        True,
    )
    # An Input is what the function receives, as is
    assert schedule_event(named, "us-east-1", "123456789012") == {"mode": "full"}


def test_without_input_the_function_gets_a_scheduled_event_naming_its_schedule() -> None:
    now = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)

    v2 = schedule_event(source(), "eu-west-1", "123456789012", now)
    rule = schedule_event(source(kind="Schedule", name="r"), "eu-west-1", "123456789012", now)

    assert v2["source"] == "aws.scheduler"
    assert v2["detail-type"] == "Scheduled Event"
    assert v2["resources"] == [
        "arn:aws:scheduler:eu-west-1:123456789012:schedule/default/ReconcileFunctionSchedule"
    ]
    assert (v2["time"], v2["region"], v2["account"]) == ("2025-03-01T12:00:00Z", "eu-west-1", "123456789012")
    assert rule["source"] == "aws.events"
    assert rule["resources"] == ["arn:aws:events:eu-west-1:123456789012:rule/r"]


# ------------------------------------------------------------------------------------------- the timer


def test_the_timer_invokes_each_enabled_schedule_every_interval() -> None:
    reconcile, disabled = FakeFunction(), FakeFunction()
    runner = ScheduleRunner(
        [source(), source("Disabled", enabled=False)],
        FakePool(ReconcileFunction=reconcile, Disabled=disabled),  # type: ignore[arg-type]
        region="us-east-1",
        account_id="123456789012",
        interval=0.05,
    ).start()
    try:
        wait_until(lambda: len(reconcile.events) >= 2, timeout=5, interval=0.01, message="two scheduled runs")
    finally:
        runner.stop()

    assert len(reconcile.events) >= 2
    assert all(event["source"] == "aws.scheduler" for event in reconcile.events)
    assert disabled.events == []


def test_the_log_names_the_templates_rate_and_the_interval_here(caplog: pytest.LogCaptureFixture) -> None:
    """The README says the local stack reconciles every minute and AWS every 5 minutes: the log line says
    both, under a schedule name that claims neither."""
    caplog.set_level("INFO", logger="memmy_local.runners")
    (template_source,) = schedule_sources(load_template(TEMPLATE_PATH), REFS)
    reconcile = FakeFunction()
    runner = ScheduleRunner(
        [template_source],
        FakePool(ReconcileFunction=reconcile),  # type: ignore[arg-type]
        region="us-east-1",
        account_id="123456789012",
        interval=0.05,
    )
    runner.run("ReconcileFunction")
    runner.start()
    try:
        wait_until(lambda: len(reconcile.events) >= 2, timeout=5, interval=0.01, message="a scheduled run")
    finally:
        runner.stop()

    asked, timed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("schedule ")][:2]
    assert asked.startswith("schedule ReconcileFunctionSchedule (rate(5 minutes) on AWS; asked for now): ")
    assert timed.startswith("schedule ReconcileFunctionSchedule (rate(5 minutes) on AWS; here every 0.05 s): ")
    assert "Minutes" not in template_source.name


def test_a_failing_scheduled_run_is_logged_and_the_timer_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    failing = FakeFunction(error=RuntimeError("MemOS down"))
    runner = ScheduleRunner(
        [source()],
        FakePool(ReconcileFunction=failing),  # type: ignore[arg-type]
        region="us-east-1",
        account_id="123456789012",
        interval=0.05,
    ).start()
    try:
        wait_until(lambda: len(failing.events) >= 2, timeout=5, interval=0.01, message="two scheduled runs")
    finally:
        runner.stop()

    assert len(failing.events) >= 2
    assert "scheduled ReconcileFunction failed" in caplog.text


def test_interval_zero_never_fires_but_run_invokes_once_and_returns_the_result() -> None:
    reconcile = FakeFunction(result={"restarted": 2})
    pool = FakePool(ReconcileFunction=reconcile)
    runner = ScheduleRunner(
        [source()],
        pool,  # type: ignore[arg-type]
        region="us-east-1",
        account_id="123456789012",
        interval=0,
    ).start()
    try:
        # Loaded at start, so an import error shows when the stack starts
        assert pool.loaded == ["ReconcileFunction"]
        time.sleep(0.1)
        assert reconcile.events == []

        assert runner.run("ReconcileFunction") == {"restarted": 2}
        assert len(reconcile.events) == 1
        with pytest.raises(KeyError, match="DeleteFunction"):
            runner.run("DeleteFunction")
    finally:
        runner.stop()


# -------------------------------------------------------------------------------- the control endpoint


@pytest.fixture
def control(tmp_path: Path) -> Any:
    runs: list[str] = []

    def run(function: str) -> Any:
        runs.append(function)
        if function == "Broken":
            raise ValueError("no table")
        return server.result

    server = ControlServer(run, lambda: ["ReconcileFunction", "Broken"]).start(tmp_path, api_url="http://x")
    server.runs = runs
    server.result = {"restarted": 1}
    yield server
    server.stop()


def test_the_control_endpoint_needs_the_recorded_token(control: Any, tmp_path: Path) -> None:
    state = read_state(tmp_path)
    assert state["control_url"] == control.url
    assert state["api_url"] == "http://x"
    assert control.url.startswith("http://127.0.0.1:")
    # Only the owner can read the token
    assert stat.S_IMODE(state_file(tmp_path).stat().st_mode) == 0o600

    for headers in ({}, {TOKEN_HEADER: "guess"}):
        response = httpx.post(f"{control.url}/schedules/ReconcileFunction", headers=headers)
        assert response.status_code == 403
    assert control.runs == []


def test_the_control_endpoint_runs_a_scheduled_function_and_reports_its_outcome(control: Any) -> None:
    headers = {TOKEN_HEADER: control.token}

    listed = httpx.get(f"{control.url}/schedules", headers=headers)
    ran = httpx.post(f"{control.url}/schedules/ReconcileFunction", headers=headers)
    failed = httpx.post(f"{control.url}/schedules/Broken", headers=headers)
    unknown = httpx.post(f"{control.url}/schedules/DeleteFunction", headers=headers)

    assert listed.json() == {"functions": ["ReconcileFunction", "Broken"]}
    assert (ran.status_code, ran.json()) == (
        200,
        {"function": "ReconcileFunction", "result": {"restarted": 1}},
    )
    assert failed.status_code == 500
    assert failed.json() == {"function": "Broken", "errorType": "ValueError", "errorMessage": "no table"}
    assert unknown.status_code == 404
    assert control.runs == ["ReconcileFunction", "Broken"]


def test_stopping_removes_only_its_own_record(tmp_path: Path) -> None:
    first = ControlServer(lambda f: None, list).start(tmp_path)
    second = ControlServer(lambda f: None, list).start(tmp_path)

    first.stop()
    assert read_state(tmp_path)["token"] == second.token
    second.stop()
    assert not state_file(tmp_path).exists()


# ------------------------------------------------------------------------------------------------ CLI


def test_reconcile_runs_the_function_in_the_running_stack(
    control: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["reconcile", "--data-dir", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "function": "ReconcileFunction",
        "result": {"restarted": 1},
    }
    assert main(["reconcile", "--data-dir", str(tmp_path), "--function", "Broken", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["errorType"] == "ValueError"


def test_reconcile_says_what_it_repaired_in_words_or_that_there_was_nothing(
    control: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    control.result = {"CleanupRestarted": 2, "UploadRequeued": 1, "UploadExpired": 0, "SomethingNew": 12}
    assert main(["reconcile", "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "ReconcileFunction repaired:",
        "   2  deletions restarted (CleanupRestarted)",
        "   1  uploads of unknown outcome handed to the ingest again (UploadRequeued)",
        "  12  SomethingNew",
    ]

    control.result = {}
    assert main(["reconcile", "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "ReconcileFunction: nothing to repair\n"

    assert main(["reconcile", "--data-dir", str(tmp_path), "--function", "Broken"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "memmy-local reconcile: Broken failed (ValueError: no table)\n"


def test_reconcile_without_a_running_stack_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["reconcile", "--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "no running local stack" in err
    assert "start one with `make run` in the repository's checkout, or `memmy-local up`" in err

"""The local stack's console (memmy_local.console): whole lines only, whatever threads print at once, and
the handlers' EMF metric lines in a file of their own."""

from __future__ import annotations

import io
import json
import logging
import sys
import threading
from pathlib import Path

import pytest

from memmy_local.console import (
    FUNCTIONS_FILE_NAME,
    METRICS_FILE_NAME,
    LineRouter,
    is_function_detail,
    is_metric_line,
    stack_console,
)

EMF = json.dumps(
    {"_aws": {"Timestamp": 1, "CloudWatchMetrics": [{"Namespace": "Memmy", "Metrics": []}]}, "service": "x"},
    separators=(",", ":"),
)
APP = json.dumps(
    {"level": "INFO", "message": "request refused", "correlation_id": "r1"}, separators=(",", ":")
)
WARNING = json.dumps({"level": "WARNING", "message": "MemOS unavailable"}, separators=(",", ":"))


def test_metric_lines_and_function_details_are_told_from_the_console_lines() -> None:
    access = "2026-01-01 00:00:00,000 INFO memmy_local.gateway: GET / 200 1.0 ms"
    assert is_metric_line(EMF)
    assert not is_metric_line(APP)
    assert not is_metric_line(access)
    assert is_function_detail(APP)
    assert not is_function_detail(WARNING)
    assert not is_function_detail(EMF)
    assert not is_function_detail(access)


def test_threads_printing_at_once_never_glue_lines_and_metrics_go_apart() -> None:
    console, metrics, functions = io.StringIO(), io.StringIO(), io.StringIO()
    router = LineRouter(console, metrics, functions)
    start = threading.Barrier(8)

    def handler(n: int) -> None:
        start.wait()
        for i in range(200):
            # print() writes the text and its newline separately, as Powertools' Metrics does
            print(EMF, file=router)
            print(f'{APP[:-1]},"n":{n},"i":{i}}}', file=router)
            print(f"GET /knowledge-bases/{n}-{i} 200", file=router)

    threads = [threading.Thread(target=handler, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    lines = console.getvalue().splitlines()
    assert sorted(lines) == sorted(f"GET /knowledge-bases/{n}-{i} 200" for n in range(8) for i in range(200))
    details = functions.getvalue().splitlines()
    assert len(details) == 8 * 200
    assert all(json.loads(line)["message"] == "request refused" for line in details)
    assert metrics.getvalue().splitlines() == [EMF] * (8 * 200)


def test_a_partial_line_waits_for_its_end() -> None:
    console = io.StringIO()
    router = LineRouter(console, None)
    router.write("GET /knowledge-bases ")
    assert console.getvalue() == ""
    router.write("200\nnext")
    assert console.getvalue() == "GET /knowledge-bases 200\n"
    router.close()
    assert console.getvalue() == "GET /knowledge-bases 200\nnext\n"


def test_verbose_also_prints_the_metric_and_detail_lines() -> None:
    console, metrics, functions = io.StringIO(), io.StringIO(), io.StringIO()
    router = LineRouter(console, metrics, functions, verbose=True)
    print(EMF, file=router)
    print(APP, file=router)
    assert console.getvalue() == EMF + "\n" + APP + "\n"
    assert metrics.getvalue() == EMF + "\n"
    assert functions.getvalue() == APP + "\n"


@pytest.mark.parametrize("verbose", [False, True])
def test_the_stack_console_keeps_metrics_in_the_home_and_per_call_lines_for_verbose(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], verbose: bool
) -> None:
    original = sys.stdout
    with stack_console(tmp_path, verbose=verbose) as metrics_path:
        assert sys.stdout is not original
        print(EMF)
        print(APP)
        print(WARNING)
        logging.getLogger("memmy_local.gateway").info("GET /knowledge-bases 200 3.1 ms")
        logging.getLogger("httpx").info("HTTP Request: POST http://127.0.0.1:1/api/openmem/v1/search")
        logging.getLogger("httpx").warning("a MemOS call went wrong")
    assert sys.stdout is original

    assert metrics_path == tmp_path / METRICS_FILE_NAME
    assert metrics_path.read_text(encoding="utf-8") == EMF + "\n"
    assert (tmp_path / FUNCTIONS_FILE_NAME).read_text(encoding="utf-8") == APP + "\n"
    out, err = capsys.readouterr()
    assert (EMF in out) is verbose
    assert (APP in out) is verbose
    assert WARNING + "\n" in out
    assert "INFO memmy_local.gateway: GET /knowledge-bases 200 3.1 ms\n" in err
    assert ("HTTP Request" in err) is verbose
    assert "WARNING httpx: a MemOS call went wrong" in err

"""``make fair``'s verdict (bench/fair_recall_report.py) on hand-made recalls, and the stack settings it
changes through ``bench.load_stack --set``: each criterion must fail on its own breach."""

from __future__ import annotations

import argparse
from http import HTTPStatus

import pytest

from bench.fair_recall_report import AFTER, BEFORE, HEAVY, LIGHT, LOADED, FairReport, Shot
from bench.load_stack import load_template_copy, parse_setting

OK, LIMITED, BUSY = HTTPStatus.OK, HTTPStatus.TOO_MANY_REQUESTS, HTTPStatus.SERVICE_UNAVAILABLE


def shot(user: str, phase: str, status: int = OK, ms: float = 50, excerpts: bool | None = None) -> Shot:
    retry = "1" if status in (LIMITED, BUSY) else None
    return Shot(
        user, phase, 0.0, 0.0, ms / 1000, status, status == OK if excerpts is None else excerpts, retry
    )


def fair_run(**changes: list[Shot]) -> list[Shot]:
    """A run that passes: the light user served alone and with the heavy one at about the same latency,
    the heavy user half served, half refused by the per-user limit. ``changes`` replaces a group."""
    groups = {
        "before": [shot(LIGHT, BEFORE, ms=ms) for ms in (40, 50, 60)],
        "light": [shot(LIGHT, LOADED, ms=ms) for ms in (50, 60, 70)],
        "heavy": [shot(HEAVY, LOADED)] * 5 + [shot(HEAVY, LOADED, LIMITED)] * 5,
        "after": [shot(LIGHT, AFTER, ms=ms) for ms in (45, 55, 65)],
    }
    groups.update(changes)
    return [s for group in groups.values() for s in group]


def failed(report: FairReport) -> list[str]:
    return [what for passed, what in report.criteria() if not passed]


def test_a_fair_run_passes_and_says_so():
    report = FairReport(fair_run(), "header")

    assert report.ok, report.render()
    assert report.ratio == pytest.approx(60 / 50)  # her p50 with him over her p50 before and after, pooled
    text = report.render()
    assert "verdict: PASS" in text
    assert "| heavy | with the other |      10 |    5 |    5 |    0 |     0 |" in text
    assert "1: 5" in text  # the Retry-After values seen


@pytest.mark.parametrize(
    ("group", "shots", "criterion"),
    [
        ("light", [shot(LIGHT, LOADED), shot(LIGHT, LOADED, BUSY)], "every light recall"),
        ("before", [shot(LIGHT, BEFORE, LIMITED)], "every light recall"),
        ("light", [shot(LIGHT, LOADED, excerpts=False)], "every light recall"),
        ("light", [shot(LIGHT, LOADED, 0)], "every light recall"),
        ("light", [shot(LIGHT, LOADED, ms=ms) for ms in (90, 130, 150)], "within 2x"),
        ("heavy", [shot(HEAVY, LOADED)] * 10, "limited with 429"),
        ("heavy", [shot(HEAVY, LOADED), shot(HEAVY, LOADED, LIMITED), shot(HEAVY, LOADED, BUSY)], "no 503"),
        ("heavy", [shot(HEAVY, LOADED, LIMITED), shot(HEAVY, LOADED, 500)], "no 503"),
        ("heavy", [], "no 503"),
    ],
)
def test_each_breach_fails_its_criterion_and_the_run(group, shots, criterion):
    report = FairReport(fair_run(**{group: shots}))

    assert not report.ok
    assert [what for what in failed(report) if criterion in what], failed(report)
    assert "verdict: FAIL" in report.render()


def test_no_answered_recall_alone_fails_the_latency_criterion():
    report = FairReport(fair_run(before=[shot(LIGHT, BEFORE, BUSY)], after=[]))

    assert any("within 2x" in what for what in failed(report))


def test_a_setting_goes_into_the_stacks_template_copy(tmp_path):
    copy = load_template_copy(tmp_path, raise_limits=False, settings={"RECALL_BURST": "1000"})

    text = copy.read_text(encoding="utf-8")
    assert 'RECALL_BURST: "1000"' in text
    assert "RECALL_BURST: !Ref RecallBurst" not in text


def test_a_setting_no_function_has_is_refused(tmp_path):
    with pytest.raises(ValueError, match="RECALL_BURSTS is no function setting"):
        load_template_copy(tmp_path, raise_limits=False, settings={"RECALL_BURSTS": "1000"})


def test_a_setting_is_name_equals_value():
    assert parse_setting("RECALL_BURST=1000") == ("RECALL_BURST", "1000")
    for bad in ("RECALL_BURST", "recall_burst=1", "=1"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_setting(bad)

"""bench.import_time's figures: per round, a handler's cost and its ratio to that round's ``import boto3``;
the figure is the median over the rounds."""

from __future__ import annotations

import pytest

from bench.import_time import summarise


def _rounds(bare: float, **costs: list[float]) -> dict[str, list[float]]:
    # CPU seconds per round as the bench records them: each snippet's interpreter, bare start-up included.
    return {"python (nothing)": [bare] * 3, **{name: [bare + c for c in cs] for name, cs in costs.items()}}


def test_a_handlers_ratio_is_the_median_of_its_per_round_ratios():
    # Given rounds whose ratios are 1.2, 1.1 and 1.5 (round 2 ran on a busy machine: both slower)
    samples = _rounds(0.010, **{"import boto3": [0.100, 0.300, 0.200], "recall": [0.120, 0.330, 0.300]})

    # When the bench sums them up
    summary = summarise(samples)

    # Then the ratio is the median ratio, 1.2, not the ratio of the median costs (0.300 / 0.200 = 1.5)
    ms, ratio = summary["recall"]
    assert ratio == pytest.approx(1.2)
    assert ms == pytest.approx(300.0)
    assert summary["import boto3"] == pytest.approx((200.0, 1.0))


def test_each_rounds_bare_interpreter_is_taken_off_that_round():
    samples = {
        "python (nothing)": [0.010, 0.050, 0.010],
        "import boto3": [0.110, 0.150, 0.110],
        "recall": [0.120, 0.160, 0.120],
    }
    ms, ratio = summarise(samples)["recall"]
    assert ratio == pytest.approx(1.1)
    assert ms == pytest.approx(110.0)
    assert "python (nothing)" not in summarise(samples)

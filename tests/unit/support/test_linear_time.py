"""``tests.support.linear_time``: the time budget passes linear code and stops quadratic code at the budget."""

from __future__ import annotations

import time

import pytest

from tests.support.linear_time import assert_linear_time


def test_linear_code_keeps_to_its_budget() -> None:
    assert_linear_time(lambda n: sum(range(n)), lambda size: size * 10, large=64 * 1024)


def test_quadratic_code_fails_at_its_budget_instead_of_running_on() -> None:
    def quadratic(n: int) -> int:
        return sum(1 for i in range(n) for _ in range(i))

    started = time.monotonic()
    with pytest.raises(AssertionError, match="not linear"):
        assert_linear_time(quadratic, lambda size: size // 4, large=64 * 1024)  # about 7 s if let run
    assert time.monotonic() - started < 5

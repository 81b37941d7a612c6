"""The tests' one polling helper: returns what it waited for, fails in time and says what it waited for."""

from __future__ import annotations

import time

import pytest

from tests.support.clock import FakeClock
from tests.support.polling import wait_until


class Probe:
    """Answers ``values`` in turn (the last one forever) and records the clock's time at each call."""

    def __init__(self, *values: object, clock: FakeClock) -> None:
        self.answers = list(values)
        self.clock = clock
        self.asked: list[float] = []

    def __call__(self) -> object:
        self.asked.append(self.clock.now())
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_given_a_condition_that_holds_at_once_then_its_value_is_returned_without_sleeping() -> None:
    clock = FakeClock()
    found = wait_until(lambda: {"id": "fi_1"}, timeout=5, clock=clock.now, sleep=clock.sleep)
    assert found == {"id": "fi_1"}
    assert clock.sleeps == []


def test_given_a_condition_that_holds_later_then_the_first_truthy_value_is_returned() -> None:
    clock = FakeClock()
    probe = Probe(None, [], 0, ["a"], ["b"], clock=clock)
    assert wait_until(probe, timeout=5, interval=0.1, clock=clock.now, sleep=clock.sleep) == ["a"]
    assert clock.sleeps == [0.1, 0.1, 0.1]


def test_given_a_condition_that_never_holds_then_it_fails_naming_what_and_the_last_value() -> None:
    clock = FakeClock()
    probe = Probe(None, [], clock=clock)
    with pytest.raises(AssertionError, match=r"waited 2 s for the file to be available; last seen: \[\]$"):
        wait_until(probe, timeout=2, message="the file to be available", clock=clock.now, sleep=clock.sleep)


def test_given_a_message_function_then_it_is_called_only_when_the_time_is_up() -> None:
    clock = FakeClock()
    described: list[float] = []

    def describe() -> str:
        described.append(clock.now())
        return "the log to say ready (log: starting)"

    assert wait_until(Probe(None, True, clock=clock), timeout=1, message=describe, clock=clock.now, sleep=clock.sleep)
    assert described == []
    with pytest.raises(AssertionError, match=r"for the log to say ready \(log: starting\); last seen: None"):
        wait_until(lambda: None, timeout=1, message=describe, clock=clock.now, sleep=clock.sleep)
    assert described == [clock.now()]


def test_the_timeout_is_respected_and_the_last_sleep_ends_at_the_deadline() -> None:
    clock = FakeClock(start=100.0)
    probe = Probe(False, clock=clock)
    with pytest.raises(AssertionError):
        wait_until(probe, timeout=1.0, interval=0.3, clock=clock.now, sleep=clock.sleep)
    # Asked at 0, 0.3, 0.6, 0.9 and once more at the deadline; never slept past it.
    assert clock.sleeps == pytest.approx([0.3, 0.3, 0.3, 0.1])
    assert probe.asked == pytest.approx([100.0, 100.3, 100.6, 100.9, 101.0])
    assert clock.now() == pytest.approx(101.0)


def test_a_zero_timeout_asks_once() -> None:
    clock = FakeClock()
    probe = Probe(None, clock=clock)
    with pytest.raises(AssertionError, match="waited 0 s"):
        wait_until(probe, timeout=0, clock=clock.now, sleep=clock.sleep)
    assert probe.asked == [clock.now()]
    assert clock.sleeps == []


def test_an_exception_from_the_probe_ends_the_wait_at_once() -> None:
    clock = FakeClock()

    def probe() -> bool:
        raise RuntimeError("the stack exited")

    with pytest.raises(RuntimeError, match="the stack exited"):
        wait_until(probe, timeout=5, clock=clock.now, sleep=clock.sleep)
    assert clock.sleeps == []


@pytest.mark.parametrize(("timeout", "interval"), [(-1, 0.1), (1, 0), (1, -0.1)])
def test_a_negative_timeout_or_a_non_positive_interval_is_refused(timeout: float, interval: float) -> None:
    with pytest.raises(ValueError, match="timeout"):
        wait_until(lambda: True, timeout=timeout, interval=interval)


def test_with_the_real_clock_it_fails_once_the_timeout_is_over() -> None:
    started = time.monotonic()
    with pytest.raises(AssertionError):
        wait_until(lambda: False, timeout=0.2, interval=0.15)
    # Not before the timeout; the bound above leaves room for a busy machine (the exact sleeps are
    # checked on the fake clock above).
    assert 0.2 <= time.monotonic() - started < 1.0

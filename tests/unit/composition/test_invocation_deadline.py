"""MemOS calls end inside the invocation: timeouts shortened to fit, no retry that cannot finish, nothing
sent once the time is gone (``memmy_kb.invocation_deadline``)."""

from __future__ import annotations

import time

import httpx
import pytest

from memmy_kb import invocation_deadline
from memmy_kb.domain.engine import MemosUnavailable
from tests.support.memos_http import FixedRandom, envelope, harness


def test_an_attempt_gets_at_most_the_time_left():
    h = harness(envelope([]), time_left=lambda: 1.5, timeout=httpx.Timeout(10.0))
    h.client.get_knowledgebase_files(["f1"])
    (request,) = h.memos.requests
    assert all(value <= 1.5 for value in request.extensions["timeout"].values())


def test_nothing_is_sent_when_no_time_is_left():
    h = harness(envelope([]), time_left=lambda: 0.1)
    with pytest.raises(MemosUnavailable) as refused:
        h.client.get_knowledgebase_files(["f1"])
    assert refused.value.request_sent is False  # so a create or an add may safely be tried again
    assert h.memos.requests == []


def test_no_retry_starts_that_could_not_finish():
    # Given MemOS failing, 0.3 s left after the first attempt and a backoff of 0.1 s: 0.2 s is too little
    clock = iter([5.0, 0.3])
    h = harness(
        httpx.Response(503), time_left=lambda: next(clock), max_attempts=5, backoff_base=0.2, rng=FixedRandom(0.5)
    )
    with pytest.raises(MemosUnavailable):
        h.client.get_knowledgebase_files(["f1"])
    assert len(h.memos.requests) == 1
    assert h.sleeps == []


def test_without_a_deadline_the_configured_retries_run():
    h = harness(httpx.Response(503), max_attempts=3)
    with pytest.raises(MemosUnavailable):
        h.client.get_knowledgebase_files(["f1"])
    assert len(h.memos.requests) == 3


def test_the_deadline_follows_the_lambda_context_and_is_reset_after():
    class Context:
        def get_remaining_time_in_millis(self) -> int:
            return 3000

    assert invocation_deadline.seconds_left() is None
    with invocation_deadline.bounded_by(Context()):
        left = invocation_deadline.seconds_left()
        assert left is not None
        assert 3.0 - invocation_deadline.DEADLINE_MARGIN_SECONDS - 0.1 < left <= 3.0 - invocation_deadline.DEADLINE_MARGIN_SECONDS
        time.sleep(0.01)
        assert invocation_deadline.seconds_left() < left
    assert invocation_deadline.seconds_left() is None

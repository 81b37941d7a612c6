"""The emulator's MemOS rate limit: a sliding second of answered searches per project."""

from __future__ import annotations

import pytest

from memmy_local.cli import build_parser
from memmy_local.memos_emulator.rate_limit import SearchRateLimit
from memmy_local.provision.storage import memos_backends_secret
from tests.support.clock import FakeClock


def test_past_n_searches_in_a_second_a_project_is_refused_until_the_oldest_is_a_second_old():
    clock = FakeClock()
    limit = SearchRateLimit(3, clock.now)

    assert [limit.admit("p") for _ in range(4)] == [True, True, True, False]
    assert limit.admit("other") is True  # projects are limited apart
    clock.advance(0.5)
    assert limit.admit("p") is False  # a refused search does not count, and the window has not moved
    clock.advance(0.5)
    assert limit.admit("p") is True
    assert limit.refused() == {"p": 2}


def test_memmy_local_up_takes_a_positive_memos_qps():
    assert build_parser().parse_args(["up", "--memos-qps", "20"]).memos_qps == 20.0
    assert build_parser().parse_args(["up"]).memos_qps is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["up", "--memos-qps", "0"])


def test_the_stacks_secret_tells_the_governor_the_enforced_rate():
    assert memos_backends_secret({"k": "memmy"}, "http://127.0.0.1:1/api", None) is None
    secret = memos_backends_secret({"k": "memmy"}, "http://127.0.0.1:1/api", None, 20.0)
    assert secret is not None
    assert '"id": "default"' in secret
    assert '"max_qps": 20.0' in secret

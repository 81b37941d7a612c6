"""``make fair`` in short (bench/fair_recall.py): one user's script recalling ten times a second while
another recalls once a second, on a stack of its own whose MemOS emulator is rate limited.

The same run and the same verdict as the bench, shorter: every recall of the light user answers 200 with
her excerpts, her p50 with the heavy user is within 2x of hers alone, and the heavy user is held by the
per-user limit (429) and never by the fleet's MemOS budget (no 503). The verdict's logic has its unit
tests in tests/unit/bench/test_fair_recall.py; with the per-user limit lifted (``--set RECALL_BURST=1000``)
this run fails (docs/load-test.md, "Fair recall").
"""

from __future__ import annotations

from http import HTTPStatus

import pytest

from bench import fair_recall
from bench.fair_recall_report import ALONE, HEAVY, LIGHT, LOADED

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local_stack("a stack of its own, its MemOS emulator rate limited"),
]

# The emulator's (and the backend's max_qps) at which the per-user limit holds one user's burst within
# the fleet's budget; docs/load-test.md, "Fair recall", says why the bench's 10 is too small for it.
MEMOS_QPS = 20.0


def test_a_heavy_users_recalls_are_limited_and_a_light_users_keep_their_excerpts_and_latency(tmp_path):
    settings = fair_recall.FairSettings(duration=10, baseline=3, memos_qps=MEMOS_QPS, workdir=tmp_path)

    report = fair_recall.run(settings)

    text = report.render()
    print(text)
    assert report.ok, text
    # Each phase ran on its schedule: a recall a second for her throughout, ten a second for him.
    assert len(report.of(LIGHT, *ALONE)) == 6, text
    assert len(report.of(LIGHT, LOADED)) == 10, text
    assert len(report.of(HEAVY, LOADED)) == 100, text
    # What held him was the per-user limit: its 429s came with Retry-After.
    refused = [s for s in report.of(HEAVY) if s.status == HTTPStatus.TOO_MANY_REQUESTS]
    assert refused, text
    assert all(s.retry_after and int(s.retry_after) >= 1 for s in refused), text

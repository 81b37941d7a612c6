"""The recall path's pool of MemOS clients: one attempt each, bounded by the recall budget
(``memmy_kb.composition.get_recall_memos_client``; tests and benchmarks build it over their own backends)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memmy_kb.adapters.memos.backends import MemosBackends
from memmy_kb.adapters.memos.key import MemosBackendConfig


def recall_engines(
    backends: Callable[[bool], list[MemosBackendConfig]],
    *,
    budget: float,
    max_searches: int,
    verify: Any = True,
) -> MemosBackends:
    """The recall path's pool of MemOS clients (``get_recall_memos_client``) over ``backends`` (the
    secret's; a test's or a benchmark's own list against the emulator), ``budget`` seconds for a search,
    ``max_searches`` at once."""
    import httpx

    from memmy_kb.adapters.memos.client import MemosClient
    from memmy_kb.adapters.memos.models import MemosMemory

    # The search hit's model is built on first use (defer_build); built here, once, rather than by each of
    # the first recall's concurrent searches at the same time.
    MemosMemory.model_rebuild()
    quick = min(1.0, budget)
    return MemosBackends(
        backends,
        lambda base_url, api_key: MemosClient(
            base_url,
            api_key,
            timeout=httpx.Timeout(connect=quick, read=budget, write=quick, pool=quick),
            limits=httpx.Limits(max_connections=2 * max_searches, max_keepalive_connections=max_searches),
            max_attempts=1,
            verify=verify,
        ),
    )

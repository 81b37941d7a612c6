"""``memmy_kb.composition``: one reset forgets everything the composition root caches."""

from __future__ import annotations

from typing import Any

import pytest

from memmy_kb import composition
from memmy_kb.settings import get_settings


def _cached_factories() -> dict[str, Any]:
    """Every functools cache the module holds, by name (what it defines and what it imports alike)."""
    return {
        name: value
        for name, value in vars(composition).items()
        if callable(getattr(value, "cache_clear", None)) and callable(getattr(value, "cache_info", None))
    }


def test_the_reflection_sees_the_factories_that_matter() -> None:
    # A scan that found nothing would pass the test below for the wrong reason.
    found = _cached_factories()
    assert {"get_settings", "get_kb_store", "get_memos_client", "get_idempotency_persistence"} <= set(found)


def test_reset_clears_every_cached_factory_of_the_composition_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a spy on each cache's clear (a factory added with @cache but left out of the reset is missed)
    cleared: list[str] = []
    for name, factory in _cached_factories().items():
        monkeypatch.setattr(factory, "cache_clear", lambda name=name: cleared.append(name))
    # When the one reset runs
    composition.reset_composition()
    # Then every cache was cleared, once
    assert sorted(cleared) == sorted(_cached_factories())


def test_reset_makes_the_next_read_see_the_new_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLE_NAME", "before")
    composition.reset_composition()
    assert get_settings().table_name == "before"
    monkeypatch.setenv("TABLE_NAME", "after")
    assert get_settings().table_name == "before"  # cached for the container's life
    composition.reset_composition()
    assert get_settings().table_name == "after"
    composition.reset_composition()


def test_reset_clears_the_memos_keys_parameters_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    from aws_lambda_powertools.utilities import parameters

    called: list[bool] = []
    monkeypatch.setattr(parameters, "clear_caches", lambda: called.append(True))
    composition.reset_composition()
    assert called == [True]


def test_the_recall_client_pools_a_connection_per_concurrent_search(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLE_NAME", "t")
    monkeypatch.setenv("RECALL_MAX_SEARCHES", "6")
    composition.reset_composition()
    try:
        backends: Any = composition.get_recall_memos_client()
        client: Any = backends._build("http://127.0.0.1:9", lambda _refresh: "key")  # as each backend's is built
        pool = client._http._transport._pool
        # Six searches at once keep six connections alive; as many more for searches past the budget
        assert (pool._max_keepalive_connections, pool._max_connections) == (6, 12)
    finally:
        composition.reset_composition()

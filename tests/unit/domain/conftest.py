"""Fixtures of the domain unit tests: a fresh fake table (three stores on it) and a fresh fake MemOS."""

from __future__ import annotations

import pytest

from tests.support.fakes import FakeKnowledgeEngine, FakeStores, fake_stores


@pytest.fixture
def stores() -> FakeStores:
    return fake_stores()


@pytest.fixture
def memos() -> FakeKnowledgeEngine:
    return FakeKnowledgeEngine()

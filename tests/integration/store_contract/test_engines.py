"""``KnowledgeEngines``' contract: the fake backends beside ``MemosBackends`` on two emulator projects."""

from __future__ import annotations

import pytest

from memmy_kb.domain.engine import EngineBackend, MemosBackendUnknown, MemosNotFound
from memmy_kb.domain.ports.engines import KnowledgeEngines
from tests.support.store_contract import markdown_file

# == KnowledgeEngines: the MemOS backends, beside MemosBackends on two emulator projects ==================


def test_given_two_backends_when_listed_then_each_with_its_cap_and_draining_flag(engines: KnowledgeEngines) -> None:
    assert engines.backends() == [EngineBackend("a", max_kbs=2), EngineBackend("b", max_kbs=3, draining=True)]
    with pytest.raises(MemosBackendUnknown):
        engines.engine("retired")


def test_given_a_kb_on_one_backend_when_the_other_is_asked_then_it_is_not_there_and_cannot_be_deleted_there(
    engines: KnowledgeEngines,
) -> None:
    kb = engines.engine("a").create_knowledgebase("memmy:kb_1")
    engines.engine("a").add_knowledgebase_files(kb, [markdown_file("notes~up_1.md")])

    with pytest.raises(MemosNotFound):
        list(engines.engine("b").iter_knowledgebase_files(kb))
    engines.engine("b").delete_knowledgebase(kb, delete_all=True)  # not there: done, and nothing happens
    assert len(list(engines.engine("a").iter_knowledgebase_files(kb))) == 1
    assert engines.engine("a") is engines.engine("a")  # one client per backend, kept

"""``KnowledgeEngine``'s contract: the fake MemOS beside ``MemosClient`` on the emulator."""

from __future__ import annotations

import pytest

from memmy_kb.domain.engine import FileStatus, MemosNotFound
from memmy_kb.domain.ports.engines import KnowledgeEngine
from tests.support.store_contract import markdown_file

# == KnowledgeEngine: MemOS, beside MemosClient on the emulator ========================================


def test_given_a_kb_when_files_are_added_listed_and_deleted_then_each_step_shows_and_repeats_are_harmless(
    engine: KnowledgeEngine,
) -> None:
    kb = engine.create_knowledgebase("memmy:kb_1")
    other = engine.create_knowledgebase("memmy:kb_2")

    [added] = engine.add_knowledgebase_files(kb, [markdown_file("notes~up_1.md")])
    engine.add_knowledgebase_files(other, [markdown_file("other~up_2.md")])

    assert [(f.id, f.name) for f in engine.iter_knowledgebase_files(kb)] == [(added.id, "notes~up_1.md")]
    assert [f.id for f in engine.get_knowledgebase_files([added.id, "missing"])] == [added.id]
    engine.delete_knowledgebase_files([added.id])
    engine.delete_knowledgebase_files([added.id])  # already gone: done
    assert list(engine.iter_knowledgebase_files(kb)) == []
    assert len(list(engine.iter_knowledgebase_files(other))) == 1


def test_given_a_deleted_kb_when_its_files_are_listed_or_added_then_memos_not_found(engine: KnowledgeEngine) -> None:
    kb = engine.create_knowledgebase("memmy:kb_1")

    engine.delete_knowledgebase(kb, delete_all=True)

    with pytest.raises(MemosNotFound):
        list(engine.iter_knowledgebase_files(kb))
    with pytest.raises(MemosNotFound):
        engine.add_knowledgebase_files(kb, [markdown_file("late~up_3.md")])


def test_given_a_file_when_its_next_version_is_sent_then_the_same_file_processes_it_and_a_gone_file_is_not_found(
    engine: KnowledgeEngine,
) -> None:
    kb = engine.create_knowledgebase("memmy:kb_1")
    [added] = engine.add_knowledgebase_files(kb, [markdown_file("notes~up_1.md")])

    updated = engine.update_knowledgebase_file(added.id, markdown_file("notes~up_2.md"))

    assert (updated.id, updated.status) == (added.id, FileStatus.PROCESSING)
    assert [(f.id, f.name) for f in engine.iter_knowledgebase_files(kb)] == [(added.id, "notes~up_2.md")]
    engine.delete_knowledgebase_files([added.id])
    with pytest.raises(MemosNotFound):
        engine.update_knowledgebase_file(added.id, markdown_file("notes~up_3.md"))


def test_given_kbs_without_memories_when_searched_then_nothing_and_a_scope_of_all_is_refused(
    engine: KnowledgeEngine,
) -> None:
    kb = engine.create_knowledgebase("memmy:kb_1")

    assert engine.search_memory("alice", "release checklist", [kb], limit=3) == []
    with pytest.raises(ValueError, match="explicit knowledge base ids"):
        engine.search_memory("alice", "x", ["all"])
    with pytest.raises(ValueError, match="at least one knowledge base"):
        engine.search_memory("alice", "x", [])

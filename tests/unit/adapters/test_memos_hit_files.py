"""The MemOS file ids read from a search hit (``memmy_kb.adapters.memos.hit_files``): each shape
docs/memos.md ("A hit's file") lists is read, anything else is ignored. MemOS documents none of them."""

from __future__ import annotations

from typing import Any

import pytest

from memmy_kb.adapters.memos.hit_files import MAX_HIT_FILE_IDS, MAX_ID_CHARS, hit_file_ids
from memmy_kb.adapters.memos.models import MemosMemory
from tests.support.memos_http import KB_ID, envelope, harness, memory_item


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"file_id": "f1"}, ("f1",)),
        ({"file_ids": ["f1", "f2"]}, ("f1", "f2")),
        ({"source": {"file_id": "f1"}}, ("f1",)),
        ({"source": {"id": "f1"}}, ("f1",)),
        ({"sources": [{"file_id": "f1"}, {"id": "f2"}]}, ("f1", "f2")),
        ({"sources": {"file_id": "f1"}}, ("f1",)),
        ({"source": [{"file_id": "f1"}]}, ("f1",)),
        ({"sources": [{"type": "file", "file_info": {"file_id": "f1"}}]}, ("f1",)),
        ({"sources": [{"file_info": {"id": "f1"}}]}, ("f1",)),
        ({"metadata": {"file_ids": ["f1"]}}, ("f1",)),  # where MemOS's open-source server keeps them
        ({"metadata": {"file_id": "f1", "sources": [{"file_id": "f2"}]}}, ("f1", "f2")),
        # A source's own file_id comes before its id (a message id, say).
        ({"sources": [{"id": "msg-9", "file_id": "f1"}]}, ("f1",)),
        # The same id named twice, in the hit and its metadata, counts once.
        ({"file_id": "f1", "file_ids": ["f1"], "metadata": {"file_ids": ["f1", "f2"]}}, ("f1", "f2")),
    ],
)
def test_each_shape_read(extra: dict[str, Any], expected: tuple[str, ...]) -> None:
    assert hit_file_ids({**memory_item(), **extra}) == expected
    assert MemosMemory.model_validate({**memory_item(), **extra}).to_search_hit().memos_file_ids == expected


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"source": "file"},  # MemOS's metadata.source is a word saying where a memory came from
        {"metadata": {"source": "file", "sources": ["a chat turn"]}},
        {"file_id": 42},
        {"file_id": ""},
        {"file_id": "two words"},
        {"file_id": "line\nbreak"},
        {"file_id": "x" * (MAX_ID_CHARS + 1)},
        {"file_ids": "f1"},  # a string, not a list
        {"file_ids": [["f1"]], "sources": [["f1"]]},
        {"file_ids": [None, 7, {"id": "f1"}]},
        {"source": {"name": "report.pdf"}},
        {"source": {"file_info": "f1"}},
        {"metadata": ["f1"]},
        {"metadata": {"file_ids": None}},
        # More than a few distinct ids: the hit's source is unclear, none is read.
        {"file_ids": [f"f{n}" for n in range(MAX_HIT_FILE_IDS + 1)]},
    ],
)
def test_anything_else_is_ignored(extra: dict[str, Any]) -> None:
    assert hit_file_ids({**memory_item(), **extra}) == ()
    assert MemosMemory.model_validate({**memory_item(), **extra}).to_search_hit().memos_file_ids == ()


def test_a_few_ids_are_read_up_to_the_most() -> None:
    ids = [f"f{n}" for n in range(MAX_HIT_FILE_IDS)]
    assert hit_file_ids({"file_ids": ids}) == tuple(ids)


def test_a_field_of_our_own_name_is_not_read() -> None:
    memory = MemosMemory.model_validate({**memory_item(), "memos_file_ids": ["f1"]})
    assert memory.memos_file_ids == ()


def test_search_hands_the_domain_the_ids_a_hit_gives() -> None:
    items = [
        {**memory_item(), "metadata": {"file_ids": ["f-open-source"]}},
        {**memory_item(), "sources": [{"file_id": "f-sources"}]},
        memory_item(),
    ]
    h = harness(envelope({"memory_detail_list": items}))
    hits = h.client.search_memory("kb-reader-u1", "营收", [KB_ID])
    assert [hit.memos_file_ids for hit in hits] == [("f-open-source",), ("f-sources",), ()]
    assert hits[0].content == "营收增长了百分之十。"

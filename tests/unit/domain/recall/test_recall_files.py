"""Recall that names each excerpt's file (``attribution="by_file"``, the default) on the fakes: one search
per backend, the file (or candidates, or only the KBs) from the text, the re-check when a KB leaves
mid-search, and the names read as the files are now. The fingerprint cache is in ``test_prints_cache.py``."""

from __future__ import annotations

from memmy_kb.domain.recall.prints_cache import PrintsCache
from memmy_kb.domain.recall.rate_governor import RateGovernor
from tests.support.clock import FakeClock
from tests.support.fakes.recall_files import FakeRecallFiles
from tests.support.recall import Repository, engine, grant, own, recall_with, run

# Two READMEs that share a section heading, and a licence kept in two KBs.
README_A = (
    "# Widget\nWidget renders charts in the terminal.\n## Further Information\n"
    "Send questions about the chart renderer to the widget mailing list, and read the changelog before "
    "upgrading because the colour palette moved to a separate package in version two.\n"
)
README_B = (
    "# Gadget\nGadget syncs calendars between devices.\n## Further Information\n"
    "Calendar conflicts are resolved by the most recent edit; the sync daemon logs every merge to a local "
    "journal that support engineers can replay when a meeting disappears.\n"
)
PARA_A = README_A.split("## Further Information\n")[1].strip()
PARA_B = README_B.split("## Further Information\n")[1].strip()
LICENCE = (
    "Permission is hereby granted, free of charge, to any person obtaining a copy of this software and "
    "associated documentation files, to deal in the software without restriction, including without "
    "limitation the rights to use, copy, modify, merge, publish, distribute, sublicense and sell copies."
)
UNKNOWN = "Text that no file of any knowledge base holds, written by the memory system in its own words today."


def world(kbs: list[str], *, memories: dict[str, list[tuple[str, str, float]]]) -> tuple:
    memos = engine(*kbs, per_kb=0)
    for kb, hits in memories.items():
        for title, content, score in hits:
            memos.add_memory(f"m-{kb}", title, content, score)
    return memos, FakeRecallFiles()


def test_two_files_sharing_a_heading_the_excerpt_names_the_one_that_holds_its_text():
    repo = Repository([[own("kb1")]])
    memos, files = world(["kb1"], memories={"kb1": [("Further Information", PARA_A, 0.9)]})
    files.add_folder("kb1", "fo_docs", "docs")
    files.add_folder("kb1", "fo_widget", "widget", parent_id="fo_docs")
    files.add_file("kb1", "fi_a", "README.md", README_A, folder_id="fo_widget")
    files.add_file("kb1", "fi_b", "README.md", README_B)

    result = run(repo, memos, attribution="by_file", files=files, prints=PrintsCache())

    (item,) = result.items
    assert item.title == "Further Information"
    assert item.file is not None
    assert item.files == []
    assert (item.file.id, item.file.name, item.file.folder_path, item.file.version) == (
        "fi_a", "README.md", "docs/widget", 1,
    )  # fmt: skip
    assert item.file.knowledge_base_id == "kb1"
    assert item.knowledge_base.id == "kb1"
    assert "来源 Source: 《README.md》 § Further Information（文件夹 folder: docs/widget）" in result.context


def test_eight_kbs_on_one_backend_are_one_search_and_each_excerpt_names_its_kb_by_its_file():
    kbs = [f"kb{n}" for n in range(8)]
    repo = Repository([[own(kb) for kb in kbs]])
    memos, files = world(kbs, memories={"kb2": [("Further Information", PARA_A, 0.9)], "kb5": [("FI", PARA_B, 0.8)]})
    files.add_file("kb2", "fi_a", "a.md", README_A)
    files.add_file("kb5", "fi_b", "b.md", README_B)

    result = run(repo, memos, attribution="by_file", files=files, prints=PrintsCache())

    assert len(memos.searches) == 1
    assert len(memos.searches[0].kb_ids) == 8
    assert memos.searches[0].limit == 25  # enough to keep five per KB after attribution
    assert [(i.knowledge_base.id, i.file.id) for i in result.items] == [("kb2", "fi_a"), ("kb5", "fi_b")]
    assert len(files.batch_gets) == 1


def test_the_per_kb_plan_stays_for_comparison_and_names_files_too():
    kbs = [f"kb{n}" for n in range(8)]
    repo = Repository([[own(kb) for kb in kbs]])
    memos, files = world(kbs, memories={"kb2": [("Further Information", PARA_A, 0.9)]})
    files.add_file("kb2", "fi_a", "a.md", README_A)

    result = run(repo, memos, attribution="per_kb", files=files, prints=PrintsCache())

    assert len(memos.searches) == 4
    assert [i.file.id for i in result.items] == ["fi_a"]


def test_max_per_kb_applies_after_attribution_in_one_search():
    repo = Repository([[own("kb1"), own("kb2")]])
    paragraphs = [f"Paragraph {n} of the long handbook explains step {n} of the refund process in detail." for n in range(8)]
    memos, files = world(["kb1", "kb2"], memories={"kb1": [(f"s{n}", p, 0.9 - n / 100) for n, p in enumerate(paragraphs)],
                                                   "kb2": [("FI", PARA_B, 0.1)]})  # fmt: skip
    files.add_file("kb1", "fi_h", "handbook.md", "\n".join(paragraphs))
    files.add_file("kb2", "fi_b", "b.md", README_B)

    result = run(repo, memos, attribution="by_file", files=files, prints=PrintsCache(), max_per_kb=3, limit=9)

    assert [i.knowledge_base.id for i in result.items] == ["kb1", "kb1", "kb1", "kb2"]


def test_a_text_in_two_files_names_both_as_candidates_and_no_one_file():
    repo = Repository([[own("kb1")]])
    memos, files = world(["kb1"], memories={"kb1": [("MIT License", LICENCE, 0.9)]})
    files.add_file("kb1", "fi_l1", "LICENSE", LICENCE, folder_id=None)
    files.add_file("kb1", "fi_l2", "LICENSE.txt", "Copyright 2026\n" + LICENCE)

    (item,) = run(repo, memos, attribution="by_file", files=files, prints=PrintsCache()).items

    assert item.file is None
    assert sorted(f.id for f in item.files) == ["fi_l1", "fi_l2"]
    assert item.knowledge_base.id == "kb1"


def test_a_text_no_file_holds_names_the_kbs_it_could_be_from():
    repo = Repository([[own("kb1"), own("kb2")]])
    memos, files = world(["kb1", "kb2"], memories={"kb1": [("t", UNKNOWN, 0.9)]})
    files.add_file("kb1", "fi_a", "a.md", README_A)

    (item,) = run(repo, memos, attribution="by_file", files=files, prints=PrintsCache()).items

    assert item.file is None
    assert item.files == []
    assert item.knowledge_base is None
    assert sorted(k.id for k in item.knowledge_bases) == ["kb1", "kb2"]


def test_never_a_file_of_a_kb_that_was_not_searched():
    # kb2 is the caller's, and holds the text, but the request narrows the scope to kb1.
    repo = Repository([[own("kb1"), own("kb2")]])
    memos, files = world(["kb1", "kb2"], memories={"kb1": [("Further Information", PARA_A, 0.9)]})
    files.add_file("kb2", "fi_a", "a.md", README_A)

    result = run(repo, memos, attribution="by_file", files=files, prints=PrintsCache(), knowledge_base_ids=["kb1"])

    (item,) = result.items
    assert item.file is None
    assert item.files == []
    assert item.knowledge_base.id == "kb1"
    assert "kb2" not in files.prints_queries


def test_a_deleted_file_and_a_file_in_a_deleted_folder_are_not_named():
    repo = Repository([[own("kb1")]])
    memos, files = world(["kb1"], memories={"kb1": [("FI", PARA_A, 0.9), ("FI", PARA_B, 0.8)]})
    files.add_file("kb1", "fi_a", "a.md", README_A)
    files.add_folder("kb1", "fo_gone", "gone")
    files.add_file("kb1", "fi_b", "b.md", README_B, folder_id="fo_gone")
    files.delete_file("kb1", "fi_a")
    del files.folders["kb1"]["fo_gone"]

    items = run(repo, memos, attribution="by_file", files=files, prints=PrintsCache()).items

    assert [(i.file, i.files, i.knowledge_base.id) for i in items] == [(None, [], "kb1"), (None, [], "kb1")]


def test_a_replaced_file_keeps_its_id_and_names_the_new_version():
    repo = Repository([[own("kb1")]], file_counts={"kb1": 1})
    memos, files = world(["kb1"], memories={"kb1": [("Further Information", PARA_B, 0.9)]})
    files.add_file("kb1", "fi_a", "README.md", README_A)
    files.add_file("kb1", "fi_a", "README.md", README_B, version=2)

    (item,) = run(repo, memos, attribution="by_file", files=files, prints=PrintsCache()).items

    assert (item.file.id, item.file.version) == ("fi_a", 2)


# ------------------------------------------------------------------------------------- re-check


def test_a_kb_leaving_mid_search_drops_its_hits_and_the_unattributed_ones_and_keeps_the_others():
    repo = Repository([[own("kb1"), grant("kb2")], [own("kb1")]])  # kb2 revoked during the search
    memos, files = world(
        ["kb1", "kb2"],
        memories={"kb1": [("FI", PARA_A, 0.9), ("t", UNKNOWN, 0.95)], "kb2": [("FI", PARA_B, 0.99)]},
    )
    files.add_file("kb1", "fi_a", "a.md", README_A)
    files.add_file("kb2", "fi_b", "b.md", README_B)

    result = run(repo, memos, attribution="by_file", files=files, prints=PrintsCache())

    assert len(memos.searches) == 1
    assert [i.file.id for i in result.items] == ["fi_a"]
    assert result.discarded is True
    assert "Gadget" not in result.context
    assert "calendar" not in result.context.lower()


def test_candidates_spanning_a_kb_that_left_are_dropped():
    repo = Repository([[own("kb1"), grant("kb2")], [own("kb1")]])
    memos, files = world(["kb1", "kb2"], memories={"kb1": [("MIT", LICENCE, 0.9)]})
    files.add_file("kb1", "fi_l1", "LICENSE", LICENCE)
    files.add_file("kb2", "fi_l2", "LICENSE", LICENCE)

    result = run(repo, memos, attribution="by_file", files=files, prints=PrintsCache())

    assert result.items == []
    assert result.discarded is True


def test_no_kb_leaving_keeps_unattributed_hits_and_candidates_across_kbs():
    repo = Repository([[own("kb1"), grant("kb2")]])
    memos, files = world(["kb1", "kb2"], memories={"kb1": [("MIT", LICENCE, 0.9), ("t", UNKNOWN, 0.8)]})
    files.add_file("kb1", "fi_l1", "LICENSE", LICENCE)
    files.add_file("kb2", "fi_l2", "LICENSE", LICENCE)

    result = run(repo, memos, attribution="by_file", files=files, prints=PrintsCache())

    licence, unknown = result.items
    assert sorted(f.knowledge_base_id for f in licence.files) == ["kb1", "kb2"]
    assert sorted(k.id for k in licence.knowledge_bases) == ["kb1", "kb2"]
    assert unknown.files == []
    assert sorted(k.id for k in unknown.knowledge_bases) == ["kb1", "kb2"]
    assert result.discarded is False


def test_without_the_files_port_excerpts_name_the_kbs_of_their_search():
    repo = Repository([[own("kb1"), own("kb2")]])
    memos, _ = world(["kb1", "kb2"], memories={"kb1": [("FI", PARA_A, 0.9)]})

    (item,) = run(repo, memos, attribution="by_file").items

    assert item.file is None
    assert sorted(k.id for k in item.knowledge_bases) == ["kb1", "kb2"]


def test_the_governor_near_the_rate_limit_takes_nothing_from_one_search_per_backend():
    kbs = [f"kb{n}" for n in range(8)]
    repo = Repository([[own(kb) for kb in kbs]])
    memos, files = world(kbs, memories={"kb2": [("Further Information", PARA_A, 0.9)]})
    files.add_file("kb2", "fi_a", "a.md", README_A)
    governor = RateGovernor(FakeClock().now)
    for _ in range(10):  # this environment just served ten recalls of four searches: the per-KB plan degrades
        governor.allowances({"default": 4}, {})

    result = recall_with(repo, memos, user_id="bob", query="q", attribution="by_file", files=files, governor=governor)

    assert len(memos.searches) == 1
    assert result.saved == 0
    assert result.degraded is False
    assert [e.files[0].file_id for e in result.block.excerpts] == ["fi_a"]


def test_a_hit_is_matched_only_against_the_files_of_the_kbs_its_own_search_covered():
    # Per KB, kb1 and kb2 are two searches: kb1's hit cannot be kb2's file, whatever kb2 holds
    repo = Repository([[own("kb1"), own("kb2")]])
    memos, files = world(["kb1", "kb2"], memories={"kb1": [("FI", PARA_A, 0.9)]})
    files.add_file("kb2", "fi_a", "a.md", README_A)

    (item,) = run(repo, memos, attribution="per_kb", files=files, prints=PrintsCache()).items

    assert item.file is None
    assert item.knowledge_base.id == "kb1"

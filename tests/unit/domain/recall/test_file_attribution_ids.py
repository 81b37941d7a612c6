"""A hit that gives MemOS file ids is named from them first (``memmy_kb.domain.recall.file_attribution``): only
ids of files of the KBs its search covered count; when none does, its text decides, as for a hit without
ids. The ids are read from the PRINT# items recall already loads (``FilePrints.memos_file_id``)."""

from __future__ import annotations

from memmy_kb.domain.engine import SearchHit
from memmy_kb.domain.recall.file_attribution import attribute_files
from memmy_kb.domain.recall.prints_cache import KbPrints, PrintsCache, load_prints
from tests.support.fakes.recall_files import FakeRecallFiles
from tests.support.recall import Repository, engine, own, run

WIDGET = (
    "Widget renders charts in the terminal. Send questions about the chart renderer to the widget mailing "
    "list, and read the changelog before upgrading because the colour palette moved to a separate package."
)
GADGET = (
    "Gadget syncs calendars between devices. Calendar conflicts are resolved by the most recent edit; the "
    "sync daemon logs every merge to a local journal that support engineers can replay later on."
)
REWORDED = "A memory system's own summary of a document, sharing no run of words with any file kept here at all."


def ready_of(files: FakeRecallFiles, *kb_ids: str) -> dict[str, KbPrints]:
    return {kb_id: load_prints(files, kb_id, (1, 0)) for kb_id in kb_ids}


def two_files() -> FakeRecallFiles:
    files = FakeRecallFiles()
    files.add_file("kb1", "fi_w", "widget.md", WIDGET)  # MemOS id m-fi_w
    files.add_file("kb1", "fi_g", "gadget.md", GADGET)  # MemOS id m-fi_g
    return files


def test_an_id_names_its_file_even_when_the_text_matches_another():
    ready = ready_of(two_files(), "kb1")

    assert attribute_files(WIDGET, ["kb1"], ready) == (("kb1", "fi_w", 1),)
    assert attribute_files(WIDGET, ["kb1"], ready, ("m-fi_g",)) == (("kb1", "fi_g", 1),)


def test_an_id_names_a_file_whose_text_is_not_recognised():
    ready = ready_of(two_files(), "kb1")

    assert attribute_files(REWORDED, ["kb1"], ready) == ()
    assert attribute_files(REWORDED, ["kb1"], ready, ("m-fi_w",)) == (("kb1", "fi_w", 1),)


def test_several_ids_name_candidates_and_ids_of_no_file_of_ours_are_left_out():
    ready = ready_of(two_files(), "kb1")

    found = attribute_files(REWORDED, ["kb1"], ready, ("m-fi_w", "m-unknown", "m-fi_g"))

    assert found == (("kb1", "fi_w", 1), ("kb1", "fi_g", 1))


def test_ids_that_name_no_file_leave_the_text_to_decide():
    ready = ready_of(two_files(), "kb1")

    assert attribute_files(GADGET, ["kb1"], ready, ("m-unknown", "kb1", "fi_w")) == (("kb1", "fi_g", 1),)


def test_an_id_of_a_file_in_a_kb_not_searched_is_ignored_and_the_text_decides():
    files = two_files()
    files.add_file("kb2", "fi_x", "secret.md", "Quarterly numbers nobody outside finance may read, kept apart.")
    ready = ready_of(files, "kb1", "kb2")  # both loaded (another search of the recall covered kb2)

    assert attribute_files(GADGET, ["kb1"], ready, ("m-fi_x",)) == (("kb1", "fi_g", 1),)
    assert attribute_files(REWORDED, ["kb1"], ready, ("m-fi_x",)) == ()
    # Among several ids, only those of files of the KBs searched count.
    assert attribute_files(REWORDED, ["kb1"], ready, ("m-fi_x", "m-fi_w")) == (("kb1", "fi_w", 1),)


def test_an_item_without_the_memos_id_still_works_by_its_text():
    files = FakeRecallFiles()
    files.add_file("kb1", "fi_w", "widget.md", WIDGET, prints_memos_id=False)  # written before it was kept
    files.add_file("kb1", "fi_g", "gadget.md", GADGET)
    ready = ready_of(files, "kb1")

    assert ready["kb1"].memos_files == {"m-fi_g": (("kb1", "fi_g", 1),)}
    assert attribute_files(WIDGET, ["kb1"], ready, ("m-fi_w",)) == (("kb1", "fi_w", 1),)
    assert attribute_files(REWORDED, ["kb1"], ready, ("m-fi_w",)) == ()


def test_a_replaced_file_is_named_at_the_version_its_text_matches_else_the_latest():
    files = FakeRecallFiles()
    files.add_file("kb1", "fi_w", "widget.md", WIDGET, version=1)
    files.add_file("kb1", "fi_w", "widget.md", GADGET, version=2)  # the same MemOS id, the next version
    ready = ready_of(files, "kb1")

    assert attribute_files(WIDGET, ["kb1"], ready, ("m-fi_w",)) == (("kb1", "fi_w", 1),)
    assert attribute_files(GADGET, ["kb1"], ready, ("m-fi_w",)) == (("kb1", "fi_w", 2),)
    assert attribute_files(REWORDED, ["kb1"], ready, ("m-fi_w",)) == (("kb1", "fi_w", 2),)


def test_recall_names_the_file_a_hit_gives_by_its_memos_id():
    repo = Repository([[own("kb1"), own("kb2")]])
    memos = engine("kb1", "kb2", per_kb=0)
    memos.knowledge_bases["m-kb1"].memories += [
        SearchHit("Overview", REWORDED, 0.9, memos_file_ids=("m-fi_g",)),
        SearchHit("Overview", WIDGET, 0.8, memos_file_ids=("m-fi_x",)),  # a file of kb2: not this search's
    ]
    files = two_files()
    files.add_file("kb2", "fi_x", "x.md", GADGET)

    # Narrowed to kb1: kb2 is the caller's too, but not searched.
    items = run(repo, memos, files=files, prints=PrintsCache(), knowledge_base_ids=["kb1"]).items

    assert [(i.file.id, i.file.name, i.knowledge_base.id) for i in items] == [
        ("fi_g", "gadget.md", "kb1"),
        ("fi_w", "widget.md", "kb1"),
    ]

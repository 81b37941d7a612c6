"""``ContentStore``'s contract for folders and files, on the fake and on DynamoDB."""

from __future__ import annotations

import pytest

from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.records import KnowledgeBaseRecord
from tests.support.factories import at, file_record, folder_record, upload_record
from tests.support.store_contract import Backend, refused

# == ContentStore: folders and files ==================================================================


def test_given_items_of_two_kbs_when_one_is_queried_then_its_folders_files_and_uploads_in_id_order(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    folders = [folder_record("fo_b"), folder_record("fo_a", parent_id="fo_b")]
    files = [file_record("fi_2", folder_id="fo_a"), file_record("fi_1")]
    uploads = [upload_record("up_2", state="rejected", reason="bad"), upload_record("up_1")]
    backend.seed(*folders, *files, *uploads)
    backend.seed(
        folder_record("fo_x", kb_id="kb_2"),
        file_record("fi_x", kb_id="kb_2"),
        upload_record("up_x", kb_id="kb_2"),
    )

    assert backend.contents.query_kb_items("kb_1") == (
        [folders[1], folders[0]],
        [files[1], files[0]],
        [uploads[1], uploads[0]],
    )
    assert backend.contents.query_kb_items("kb_empty") == ([], [], [])


def test_given_nothing_when_reading_a_folder_file_or_upload_then_none(backend: Backend) -> None:
    assert backend.contents.get_folder("kb_1", "fo_x") is None
    assert backend.contents.get_file("kb_1", "fi_x") is None
    assert backend.contents.get_upload("kb_1", "up_x") is None


def test_given_a_kb_when_folders_are_put_at_the_root_and_nested_then_they_read_back(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    docs, v1 = folder_record("fo_docs", name="文档"), folder_record("fo_v1", parent_id="fo_docs")

    backend.contents.put_folder(docs)
    backend.contents.put_folder(v1)

    assert (backend.contents.get_folder("kb_1", "fo_docs"), backend.contents.get_folder("kb_1", "fo_v1")) == (
        docs,
        v1,
    )


def test_given_no_kb_when_a_folder_is_put_then_item_missing_kb(backend: Backend) -> None:
    assert (
        refused(ItemMissing, lambda: backend.contents.put_folder(folder_record("fo_a", kb_id="kb_gone")))
        == "kb"
    )
    assert backend.contents.get_folder("kb_gone", "fo_a") is None


def test_given_no_parent_when_a_folder_is_put_then_item_missing_folder(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    assert refused(
        ItemMissing, lambda: backend.contents.put_folder(folder_record("fo_a", parent_id="fo_none"))
    ) == ("folder")
    assert backend.contents.get_folder("kb_1", "fo_a") is None


def test_given_no_kb_and_no_parent_when_a_folder_is_put_then_the_kb_is_reported(backend: Backend) -> None:
    folder = folder_record("fo_a", kb_id="kb_gone", parent_id="fo_none")

    assert refused(ItemMissing, lambda: backend.contents.put_folder(folder)) == "kb"


def test_given_a_folder_id_in_use_when_a_folder_is_put_then_item_missing_folder_and_it_is_kept(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    backend.contents.put_folder(folder_record("fo_a", name="first"))

    assert (
        refused(ItemMissing, lambda: backend.contents.put_folder(folder_record("fo_a", name="second")))
        == "folder"
    )
    assert backend.contents.get_folder("kb_1", "fo_a").name == "first"  # type: ignore[union-attr]


def test_given_a_folder_when_renamed_and_moved_then_name_and_parent_change_and_the_rest_stays(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    docs, specs = folder_record("fo_docs"), folder_record("fo_specs", parent_id="fo_docs")
    v1 = folder_record("fo_v1", name="v1", created_at=at(7))
    backend.seed(docs, specs, v1)
    moved = v1.model_copy(update={"name": "v2", "parent_id": "fo_specs"})

    backend.contents.update_folder(moved, v1, [specs, docs])

    assert backend.contents.get_folder("kb_1", "fo_v1") == moved


def test_given_a_folder_moved_to_the_root_when_moved_again_then_its_root_parent_still_matches(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    docs, v1 = folder_record("fo_docs"), folder_record("fo_v1", parent_id="fo_docs")
    backend.seed(docs, v1)
    at_root = v1.model_copy(update={"parent_id": None})
    backend.contents.update_folder(at_root, v1, [])
    assert backend.contents.get_folder("kb_1", "fo_v1") == at_root

    back = at_root.model_copy(update={"parent_id": "fo_docs", "name": "again"})
    backend.contents.update_folder(back, at_root, [docs])

    assert backend.contents.get_folder("kb_1", "fo_v1") == back


def test_given_the_folder_moved_meanwhile_when_updated_from_a_stale_read_then_condition_failed_folders(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    a, b, v1 = folder_record("fo_a"), folder_record("fo_b"), folder_record("fo_v1", parent_id="fo_a")
    backend.seed(a, b, v1)
    stale = v1.model_copy(update={"parent_id": None})

    assert (
        refused(
            ConditionFailed,
            lambda: backend.contents.update_folder(v1.model_copy(update={"parent_id": "fo_b"}), stale, [b]),
        )
        == "folders"
    )
    assert backend.contents.get_folder("kb_1", "fo_v1") == v1


def test_given_an_ancestor_moved_meanwhile_when_a_folder_moves_under_it_then_condition_failed_folders(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    a, b = folder_record("fo_a"), folder_record("fo_b")
    backend.seed(
        a, b.model_copy(update={"parent_id": "fo_a"})
    )  # b moved under a after b was read at the root

    assert refused(
        ConditionFailed,
        lambda: backend.contents.update_folder(a.model_copy(update={"parent_id": "fo_b"}), a, [b]),
    ) == ("folders")
    assert backend.contents.get_folder("kb_1", "fo_a") == a


@pytest.mark.parametrize("missing", ["folder", "ancestor"])
def test_given_a_missing_folder_or_ancestor_when_updating_then_condition_failed_folders(
    backend: Backend, kb: KnowledgeBaseRecord, missing: str
) -> None:
    a, b = folder_record("fo_a"), folder_record("fo_b")
    backend.seed(b if missing == "folder" else a)

    assert refused(
        ConditionFailed,
        lambda: backend.contents.update_folder(a.model_copy(update={"parent_id": "fo_b"}), a, [b]),
    ) == ("folders")


def test_given_a_file_when_pointed_at_a_folder_and_back_at_the_root_then_only_its_folder_changes(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    file = file_record("fi_1")
    backend.seed(folder_record("fo_docs"), file)

    backend.contents.update_file_folder("kb_1", "fi_1", "fo_docs")
    assert backend.contents.get_file("kb_1", "fi_1") == file.model_copy(update={"folder_id": "fo_docs"})
    backend.contents.update_file_folder("kb_1", "fi_1", None)

    assert backend.contents.get_file("kb_1", "fi_1") == file


@pytest.mark.parametrize(
    ("seeded", "folder_id", "item"),
    [
        ("folder", "fo_docs", "file"),
        ("file", "fo_none", "folder"),
        ("nothing", "fo_none", "file"),
        ("nothing", None, "file"),
    ],
)
def test_given_a_missing_file_or_folder_when_moving_a_file_then_item_missing_names_it(
    backend: Backend, kb: KnowledgeBaseRecord, seeded: str, folder_id: str | None, item: str
) -> None:
    if seeded == "folder":
        backend.seed(folder_record("fo_docs"))
    if seeded == "file":
        backend.seed(file_record("fi_1"))

    assert (
        refused(ItemMissing, lambda: backend.contents.update_file_folder("kb_1", "fi_1", folder_id)) == item
    )
    assert backend.contents.get_file("kb_1", "fi_1") == (file_record("fi_1") if seeded == "file" else None)

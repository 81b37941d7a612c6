"""``memmy_kb.domain.knowledge_bases.folders``: creating, renaming and moving folders, and how deep they go."""

from __future__ import annotations

from http import HTTPStatus

import pytest

from memmy_kb.domain.knowledge_bases import folders as folders_logic
from memmy_kb.records import FolderRecord
from tests.support.domain import kb, refused
from tests.support.factories import T0, folder_record
from tests.support.fakes import FakeContentStore, FakeStores

NOT_FOUND = (HTTPStatus.NOT_FOUND, "kb_not_found")
OWNER_ONLY = (HTTPStatus.FORBIDDEN, "owner_only")
FOLDER_NOT_FOUND = (HTTPStatus.NOT_FOUND, "folder_not_found")

__all__ = ["kb"]  # the fixture: kb_1, alice's, read by bob


# -- folders ---------------------------------------------------------------------------------------


def create_folder(
    kb: FakeStores, name: str, parent_id: str | None = None, user: str = "alice"
) -> FolderRecord:
    return folders_logic.create_folder(
        kb.kbs, kb.contents, user, "kb_1", name, parent_id, clock=lambda: T0, new_id=lambda: f"fo_{name}"
    )


def update_folder(
    kb: FakeStores,
    folder_id: str,
    *,
    name: str | None = None,
    parent_id: str | None = None,
    move: bool = False,
    user: str = "alice",
) -> FolderRecord:
    return folders_logic.update_folder(
        kb.kbs, kb.contents, user, "kb_1", folder_id, name=name, parent_id=parent_id, move=move
    )


def chain(kb: FakeStores, depth: int) -> list[str]:
    """Folders d1 > d2 > ... > d<depth>, nested from the root."""
    ids = [f"fo_d{i}" for i in range(1, depth + 1)]
    kb.table.seed(*(folder_record(fid, parent_id=ids[i - 1] if i else None) for i, fid in enumerate(ids)))
    return ids


def test_given_the_owner_when_creating_folders_then_they_are_stored_at_the_root_and_nested(
    kb: FakeStores,
) -> None:
    docs = create_folder(kb, "docs")
    v1 = create_folder(kb, "v1", docs.folder_id)

    assert docs == FolderRecord(kb_id="kb_1", folder_id="fo_docs", name="docs", parent_id=None, created_at=T0)
    assert kb.contents.get_folder("kb_1", "fo_v1") == v1
    assert v1.parent_id == "fo_docs"


def test_given_a_missing_parent_when_creating_a_folder_then_404_folder_not_found(kb: FakeStores) -> None:
    assert refused(lambda: create_folder(kb, "x", "fo_missing")) == FOLDER_NOT_FOUND
    assert kb.table.folders == {}


def test_given_the_kb_deleted_after_the_grant_was_read_when_creating_a_folder_then_404_kb_not_found(
    kb: FakeStores,
) -> None:
    # The owner's grant still reads (deletion removes it later in the same flow); META is already gone.
    del kb.table.kbs["kb_1"]
    assert refused(lambda: create_folder(kb, "x")) == NOT_FOUND
    assert kb.table.folders == {}


def test_given_a_reader_when_creating_a_folder_then_403(kb: FakeStores) -> None:
    assert refused(lambda: create_folder(kb, "x", user="bob")) == OWNER_ONLY


def test_given_a_stranger_when_creating_a_folder_then_404(kb: FakeStores) -> None:
    assert refused(lambda: create_folder(kb, "x", user="carol")) == NOT_FOUND


def test_given_a_chain_19_deep_when_creating_under_its_end_then_the_20th_level_is_accepted(
    kb: FakeStores,
) -> None:
    ids = chain(kb, 19)

    assert create_folder(kb, "deepest", ids[-1]).parent_id == "fo_d19"


def test_given_a_chain_20_deep_when_creating_under_its_end_then_422_folder_too_deep(kb: FakeStores) -> None:
    ids = chain(kb, folders_logic.MAX_FOLDER_DEPTH)

    assert refused(lambda: create_folder(kb, "too-deep", ids[-1])) == (
        HTTPStatus.UNPROCESSABLE_ENTITY,
        "folder_too_deep",
    )
    assert kb.contents.get_folder("kb_1", "fo_too-deep") is None


def test_given_a_folder_when_renamed_then_its_parent_stays(kb: FakeStores) -> None:
    kb.table.seed(folder_record("fo_docs"), folder_record("fo_v1", name="v1", parent_id="fo_docs"))

    renamed = update_folder(kb, "fo_v1", name="v2")

    assert (renamed.name, renamed.parent_id) == ("v2", "fo_docs")
    assert kb.contents.get_folder("kb_1", "fo_v1") == renamed


def test_given_a_folder_when_moved_then_its_name_stays_and_it_can_return_to_the_root(kb: FakeStores) -> None:
    kb.table.seed(
        folder_record("fo_docs"), folder_record("fo_specs"), folder_record("fo_v1", parent_id="fo_docs")
    )

    moved = update_folder(kb, "fo_v1", parent_id="fo_specs", move=True)
    to_root = update_folder(kb, "fo_v1", parent_id=None, move=True)

    assert (moved.name, moved.parent_id) == ("fo_v1", "fo_specs")
    assert to_root.parent_id is None
    assert kb.contents.get_folder("kb_1", "fo_v1").parent_id is None  # type: ignore[union-attr]


def test_given_no_move_when_renaming_with_parent_none_then_the_folder_is_not_moved_to_the_root(
    kb: FakeStores,
) -> None:
    kb.table.seed(folder_record("fo_docs"), folder_record("fo_v1", parent_id="fo_docs"))

    assert update_folder(kb, "fo_v1", name="v2", parent_id=None, move=False).parent_id == "fo_docs"


@pytest.mark.parametrize("target", ["fo_a", "fo_b", "fo_c"])
def test_given_a_tree_when_moving_a_folder_into_itself_or_its_subtree_then_409_folder_cycle(
    kb: FakeStores, target: str
) -> None:
    kb.table.seed(
        folder_record("fo_a"),
        folder_record("fo_b", parent_id="fo_a"),
        folder_record("fo_c", parent_id="fo_b"),
    )

    assert refused(lambda: update_folder(kb, "fo_a", parent_id=target, move=True)) == (
        HTTPStatus.CONFLICT,
        "folder_cycle",
    )
    assert kb.contents.get_folder("kb_1", "fo_a").parent_id is None  # type: ignore[union-attr]


def test_given_a_subtree_2_high_when_moved_under_a_folder_18_deep_then_it_fits_exactly(
    kb: FakeStores,
) -> None:
    ids = chain(kb, 18)
    kb.table.seed(folder_record("fo_top"), folder_record("fo_child", parent_id="fo_top"))

    assert update_folder(kb, "fo_top", parent_id=ids[-1], move=True).parent_id == "fo_d18"


def test_given_a_subtree_2_high_when_moved_under_a_folder_19_deep_then_422_folder_too_deep(
    kb: FakeStores,
) -> None:
    ids = chain(kb, 19)
    kb.table.seed(folder_record("fo_top"), folder_record("fo_child", parent_id="fo_top"))

    assert refused(lambda: update_folder(kb, "fo_top", parent_id=ids[-1], move=True)) == (
        HTTPStatus.UNPROCESSABLE_ENTITY,
        "folder_too_deep",
    )
    assert kb.contents.get_folder("kb_1", "fo_top").parent_id is None  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("folder_id", "parent_id"), [("fo_missing", None), ("fo_docs", "fo_missing")], ids=["folder", "parent"]
)
def test_given_a_missing_folder_or_parent_when_updating_then_404_folder_not_found(
    kb: FakeStores, folder_id: str, parent_id: str | None
) -> None:
    kb.table.seed(folder_record("fo_docs"))

    assert refused(lambda: update_folder(kb, folder_id, parent_id=parent_id, move=True)) == FOLDER_NOT_FOUND


def test_given_a_reader_when_updating_a_folder_then_403(kb: FakeStores) -> None:
    kb.table.seed(folder_record("fo_docs"))

    assert refused(lambda: update_folder(kb, "fo_docs", name="x", user="bob")) == OWNER_ONLY


class ConcurrentMove(FakeContentStore):
    """Another request moves fo_b under fo_a right after this one read the tree."""

    def query_folders(self, kb_id: str) -> list[FolderRecord]:
        folders = super().query_folders(kb_id)
        self.table.seed(folder_record("fo_b", parent_id="fo_a"))
        return folders


def test_given_a_concurrent_move_closing_a_cycle_when_moving_then_409_folders_changed_and_no_cycle(
    kb: FakeStores,
) -> None:
    kb.table.seed(folder_record("fo_a"), folder_record("fo_b"))
    racing = ConcurrentMove(kb.table)

    assert refused(
        lambda: folders_logic.update_folder(
            kb.kbs, racing, "alice", "kb_1", "fo_a", name=None, parent_id="fo_b", move=True
        )
    ) == (HTTPStatus.CONFLICT, "folders_changed")
    assert kb.contents.get_folder("kb_1", "fo_a").parent_id is None  # type: ignore[union-attr]

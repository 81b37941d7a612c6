"""The pure rules under deletion and repair: which items a deleted folder takes with it, and how a MemOS
file name carries the upload it came from (and loses it again wherever it is shown)."""

from __future__ import annotations

import pytest

from memmy_kb.domain.deletion.delete import unreachable
from memmy_kb.domain.knowledge_bases.folders import is_live
from memmy_kb.domain.knowledge_bases.naming import memos_file_name, shown_name, upload_id_in
from memmy_kb.domain.recall.context_block import sanitise_title
from tests.support.factories import file_record, folder_record, upload_record

UPLOAD_ID = "up_0123456789abcdef01234567"


def test_what_a_deleted_folder_leaves_unreachable_is_swept_farthest_first():
    # Given root -> (top, deleted) -> a -> b, and a live folder beside it
    folders = [
        folder_record("fo_a", parent_id="fo_top"),
        folder_record("fo_b", parent_id="fo_a"),
        folder_record("fo_side"),
        folder_record("fo_under_side", parent_id="fo_side"),
    ]
    files = [
        file_record("fi_top", folder_id="fo_top"),
        file_record("fi_b", folder_id="fo_b"),
        file_record("fi_root"),
        file_record("fi_side", folder_id="fo_side"),
    ]
    uploads = [
        upload_record("up_pending", folder_id="fo_a"),
        upload_record("up_submitting", folder_id="fo_top", state="submitting", attempt_id="x"),
        upload_record("up_done", folder_id="fo_a", state="submitted"),
        upload_record("up_elsewhere", folder_id="fo_side"),
    ]

    dead_folders, dead_files, dead_uploads = unreachable(folders, files, uploads)

    assert [f.folder_id for f in dead_folders] == ["fo_b", "fo_a"]  # farthest from the break first
    assert {f.file_id for f in dead_files} == {"fi_top", "fi_b"}
    assert {u.upload_id for u in dead_uploads} == {"up_pending", "up_submitting"}  # unfinished ones only


def test_a_half_swept_tree_is_still_found_from_whatever_is_left():
    # Given the sweep of fo_top already removed fo_a, but not fo_b under it
    folders = [folder_record("fo_b", parent_id="fo_a"), folder_record("fo_c", parent_id="fo_b")]

    dead_folders, _, _ = unreachable(folders, [file_record("fi_c", folder_id="fo_c")], [])

    assert [f.folder_id for f in dead_folders] == ["fo_c", "fo_b"]


def test_a_cycle_is_unreachable_and_live_folders_are_not():
    folders = [
        folder_record("fo_x", parent_id="fo_y"),
        folder_record("fo_y", parent_id="fo_x"),  # corrupt: a cycle
        folder_record("fo_live"),
        folder_record("fo_in", parent_id="fo_live"),
    ]

    dead_folders, _, _ = unreachable(folders, [], [])

    assert {f.folder_id for f in dead_folders} == {"fo_x", "fo_y"}
    by_id = {f.folder_id: f for f in folders}
    assert (is_live(by_id, "fo_in"), is_live(by_id, "fo_x"), is_live(by_id, "fo_gone")) == (True, False, False)


@pytest.mark.parametrize(
    ("filename", "memos_name"),
    [
        ("report.pdf", f"report [{UPLOAD_ID}].pdf"),
        ("季度 路线图.v2.md", f"季度 路线图.v2 [{UPLOAD_ID}].md"),
        ("README", f"README [{UPLOAD_ID}]"),
        (".env.txt", f".env [{UPLOAD_ID}].txt"),
    ],
)
def test_the_memos_name_carries_the_upload_id_before_the_extension_and_gives_it_back(filename, memos_name):
    assert memos_file_name(filename, UPLOAD_ID) == memos_name
    assert upload_id_in(memos_name) == UPLOAD_ID
    assert shown_name(memos_name) == filename


@pytest.mark.parametrize("name", [None, "", "report.pdf", "report [kb_0123].pdf", "[up_XYZ].md"])
def test_a_name_without_our_marker_names_no_upload(name):
    assert upload_id_in(name) is None


def test_a_title_derived_from_the_memos_name_is_shown_without_the_upload_id():
    assert sanitise_title(f"季度路线图 [{UPLOAD_ID}]") == "季度路线图"

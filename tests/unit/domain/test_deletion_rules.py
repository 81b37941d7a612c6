"""The pure rules under deletion and repair: which items a deleted folder takes with it, and how a MemOS
file name carries the upload it came from (and loses it again wherever it is shown)."""

from __future__ import annotations

import pytest

from memmy_kb.domain.context import sanitise_title
from memmy_kb.domain.deletion import subtree
from memmy_kb.domain.naming import memos_file_name, shown_name, upload_id_in
from tests.support.factories import file_record, folder_record, upload_record

UPLOAD_ID = "up_0123456789abcdef01234567"


def test_a_deleted_folders_subtree_is_everything_whose_chain_reaches_it_deepest_first():
    # Given root -> (top, deleted) -> a -> b, and a sibling folder beside top
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

    in_folders, in_files, in_uploads = subtree(folders, files, uploads, "fo_top")

    assert [f.folder_id for f in in_folders] == ["fo_b", "fo_a"]  # deepest first
    assert {f.file_id for f in in_files} == {"fi_top", "fi_b"}
    assert {u.upload_id for u in in_uploads} == {"up_pending", "up_submitting"}  # unfinished ones only


def test_a_subtree_with_a_cycle_or_a_dangling_parent_takes_only_what_reaches_the_root():
    folders = [
        folder_record("fo_x", parent_id="fo_y"),
        folder_record("fo_y", parent_id="fo_x"),  # corrupt: a cycle
        folder_record("fo_lost", parent_id="fo_elsewhere"),
        folder_record("fo_in", parent_id="fo_top"),
    ]

    in_folders, _, _ = subtree(folders, [], [], "fo_top")

    assert [f.folder_id for f in in_folders] == ["fo_in"]


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

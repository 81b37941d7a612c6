"""How the client reads the document a recall item names (``file``, ``files``) and cites it by name."""

from __future__ import annotations

import pytest

from memmy_kb_client.recall_reply import RecallFile, document_path, read_file, read_files, section_of

FILE = {
    "id": "fl_1",
    "name": "handbook.md",
    "folder_path": "policies/2024",
    "version": 2,
    "knowledge_base_id": "kb_1",
}


def _read(value: object) -> RecallFile:
    file = read_file(value)
    assert file is not None
    return file


def test_a_well_formed_file_is_read_as_it_is():
    assert read_file(FILE) == FILE
    assert document_path(_read(FILE)) == "policies/2024/handbook.md"


@pytest.mark.parametrize(
    "value",
    [
        None,
        "handbook.md",
        [FILE],
        {"name": "handbook.md"},
        {"id": "fl_1"},
        {"id": "", "name": "x"},
        {"id": 1, "name": "x"},
    ],
)
def test_anything_but_a_file_with_an_id_and_a_name_names_no_file(value):
    assert read_file(value) is None


def test_optional_fields_of_another_type_are_read_as_absent_and_the_root_has_no_folder():
    read = _read({"id": "fl_1", "name": "a.md", "folder_path": None, "version": True, "knowledge_base_id": 7})
    assert read == {
        "id": "fl_1",
        "name": "a.md",
        "folder_path": "",
        "version": None,
        "knowledge_base_id": None,
    }
    assert document_path(read) == "a.md"


def test_candidates_keep_only_the_well_formed_files_in_order():
    second = {**FILE, "id": "fl_2", "folder_path": ""}
    assert [f["id"] for f in read_files([FILE, {"name": "x"}, 3, second])] == ["fl_1", "fl_2"]
    assert read_files({"id": "fl_1"}) == []
    assert read_files(None) == []


@pytest.mark.parametrize(
    ("title", "section"),
    [
        ("Refunds", "Refunds"),
        (" Refunds ", "Refunds"),
        ("handbook.md", ""),
        ("handbook", ""),
        ("", ""),
        (None, ""),
    ],
)
def test_the_section_is_cited_after_the_name_unless_it_is_only_the_name_again(title, section):
    assert section_of(title, _read(FILE)) == section

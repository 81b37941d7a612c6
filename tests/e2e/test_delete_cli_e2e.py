"""``memmy-kb files rm``, ``folders rm`` and ``kb rm`` on the stage: what is deleted leaves
the listings (the owner's and a reader's), a reader is refused, and nothing is deleted unconfirmed."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.support.e2e_cli import cli, ok_json
from tests.support.stage import Stage

pytestmark = pytest.mark.e2e


def test_files_folders_and_the_kb_are_deleted_with_the_cli(stage: Stage, tmp_path: Path) -> None:
    suffix = uuid.uuid4().hex[:8]
    owner = stage.user(f"del-owner-{suffix}", name="Owner").token
    reading = stage.user(f"del-reader-{suffix}", name="Reader")
    reader_id, reader = reading.user_id, reading.token
    assert cli(stage, reader, "me").returncode == 0
    kb_name = stage.kb_name("待删除")

    # Given a KB shared with a reader, a folder with a subfolder, and a file at the root and one inside
    kb = ok_json(stage, owner, "kb", "create", kb_name)["id"]
    assert ok_json(stage, owner, "kb", "share", kb, reader_id)["user_id"] == reader_id
    folder = ok_json(stage, owner, "folders", "mk", kb, "资料")["id"]
    subfolder = ok_json(stage, owner, "folders", "mk", kb, "旧版", "--parent", folder)["id"]
    root_file = tmp_path / "介绍.md"
    root_file.write_text("# 介绍\nMemmy 知识库的介绍。\n", encoding="utf-8")
    deep_file = tmp_path / "旧手册.md"
    deep_file.write_text("# 旧手册\n旧版的产品手册。\n", encoding="utf-8")
    for path, where in ((root_file, []), (deep_file, ["--folder", subfolder])):
        uploaded = cli(
            stage, owner, "files", "upload", kb, str(path), *where, "--wait", "--timeout", "60"
        )
        assert uploaded.returncode == 0, uploaded.stderr
        assert uploaded.stdout.split() == ["available", path.name]
    root = ok_json(stage, owner, "files", "ls", kb)
    assert [f["name"] for f in root["folders"]] == ["资料"]
    (file_entry,) = root["files"]
    file_id = file_entry["id"]

    # When a reader deletes anything, or anyone without --yes when no one can confirm, then nothing is deleted
    for args in (["kb", "rm", kb], ["files", "rm", kb, file_id], ["folders", "rm", kb, folder]):
        refused = cli(stage, reader, *args, "--yes")
        assert refused.returncode == 1
        assert refused.stderr.strip().endswith("(403 owner_only)"), refused.stderr
        unconfirmed = cli(stage, owner, *args)
        assert unconfirmed.returncode == 1
        assert "--yes" in unconfirmed.stderr
    assert ok_json(stage, owner, "files", "ls", kb) == root

    # When the owner deletes the root file, then it is gone from the owner's and the reader's listing
    deleted_file = cli(stage, owner, "files", "rm", kb, file_id, "--yes")
    assert deleted_file.returncode == 0, deleted_file.stderr
    assert deleted_file.stdout.startswith("deleted file '介绍.md' (cleanup ")
    for token in (owner, reader):
        listing = ok_json(stage, token, "files", "ls", kb)
        assert listing["files"] == []
        assert [f["id"] for f in listing["folders"]] == [folder]
    again = cli(stage, owner, "files", "rm", kb, file_id, "--yes")
    assert again.returncode == 1
    assert again.stderr.startswith(f"error: no file with the id or name '{file_id}' in knowledge base {kb}: give"), (
        again.stderr
    )

    # When the owner deletes the folder, then it goes with its subfolder and the file inside
    cleanup = ok_json(stage, owner, "folders", "rm", kb, folder, "--yes")
    assert isinstance(cleanup["cleanup_id"], str)
    assert cleanup["cleanup_id"]
    for token in (owner, reader):
        listing = ok_json(stage, token, "files", "ls", kb)
        assert (listing["folders"], listing["files"]) == ([], [])
    for gone in (folder, subfolder):
        listed = cli(stage, owner, "files", "ls", kb, "--folder", gone)
        assert listed.returncode == 1
        assert listed.stderr.startswith(f"error: no folder with the id or name '{gone}'"), listed.stderr
    again = cli(stage, owner, "folders", "rm", kb, folder, "--yes")
    assert again.returncode == 1
    assert again.stderr.startswith(f"error: no folder with the id or name '{folder}'"), again.stderr

    # When the owner deletes the KB, then neither the owner nor the reader lists it any more
    deleted_kb = cli(stage, owner, "kb", "rm", kb, "-y")
    assert deleted_kb.returncode == 0, deleted_kb.stderr
    assert deleted_kb.stdout.startswith(f"deleted knowledge base '{kb_name}' (cleanup ")
    for token in (owner, reader):
        assert kb not in {k["id"] for k in ok_json(stage, token, "kb", "ls")}
    again = cli(stage, owner, "kb", "rm", kb, "--yes")
    assert again.returncode == 1
    # (a KB no longer listed is refused by name or id before anything is sent)
    assert again.stderr.startswith(f"error: no knowledge base of your own with the id or name '{kb}'"), again.stderr

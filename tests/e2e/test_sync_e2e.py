"""A folder kept in sync with a knowledge base on the stage, over HTTP (docs/sync.md):
``memmy-kb sync`` uploads four files (one in a sub-folder); an edit, a deletion and an addition are
exactly what the next pass changes; an emptied folder deletes nothing without ``--yes``. A folder linked in
the desktop service picks up a new file within seconds, and a service killed mid-sync and started again
converges without a duplicate."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.e2e_cli import ok_json
from tests.support.e2e_desktop import start_desktop
from tests.support.polling import wait_until
from tests.support.stack import CLI, stop_stack
from tests.support.stage import ApiTarget, Stage

pytestmark = pytest.mark.e2e

# Enough that the linked folder's first pass is still sending when the service is killed.
FILES = 80


def sync(stack: ApiTarget, token: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``memmy-kb sync`` as a script runs it (stdin no terminal), its state in ``home``."""
    env = {
        **os.environ,
        "MEMMY_KB_ENDPOINT": stack.api_url,
        "MEMMY_KB_TOKEN": token,
        "MEMMY_KB_HOME": str(home),
    }
    return subprocess.run(  # noqa: S603 - our own CLI
        [*CLI, "sync", *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=180,
        check=False,
    )


def tree(stack: ApiTarget, token: str, kb: str) -> dict[str, dict[str, Any]]:
    """Every file of the KB (and upload in flight) by its path of folder names; two at one path fail."""
    found: dict[str, dict[str, Any]] = {}
    queue: list[tuple[str | None, str]] = [(None, "")]
    with httpx.Client(
        base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    ) as api:
        while queue:
            folder, prefix = queue.pop()
            listing = api.get(
                f"/knowledge-bases/{kb}/files", params={"folder_id": folder} if folder else None
            )
            assert listing.status_code == 200, listing.text
            for entry in listing.json()["files"]:
                assert prefix + entry["name"] not in found, f"two entries at {prefix + entry['name']}"
                found[prefix + entry["name"]] = entry
            queue += [(f["id"], f"{prefix}{f['name']}/") for f in listing.json()["folders"]]
    return found


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_sync_uploads_then_makes_exactly_the_changes_and_never_empties_the_kb_unasked(
    stage: Stage, tmp_path: Path
) -> None:
    # Given a KB and a folder of four files, one in a sub-folder
    owner = stage.user(f"sync-{uuid.uuid4().hex[:8]}", name="Owner").token
    home, root = tmp_path / "home", tmp_path / "资料"
    kb = ok_json(stage, owner, "kb", "create", stage.kb_name("同步"))["id"]
    for name, text in (("a.md", "# A\n甲"), ("b.md", "# B\n乙"), ("c.txt", "丙"), ("方案/d.md", "# D\n丁")):
        write(root, name, text)

    # When it is synced with --wait, then each file is available once it returns
    first = sync(stage, owner, home, str(root), kb, "--wait", "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["ready"] == dict.fromkeys(
        ["a.md", "b.md", "c.txt", "方案/d.md"], "available"
    )
    files = tree(stage, owner, kb)
    assert sorted(files) == ["a.md", "b.md", "c.txt", "方案/d.md"]

    # When one is edited, one deleted and one added, then the plan names exactly those three, and one pass
    # makes them
    write(root, "a.md", "# A\n甲，改过了")
    (root / "b.md").unlink()
    write(root, "方案/e.md", "# E\n戊")
    plan = sync(stage, owner, home, str(root), kb, "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.splitlines()[1:5] == [
        "upload 1, replace 1, delete 1, skip 0",
        "  upload   方案/e.md",
        "  replace  a.md",
        "  delete   b.md",
    ]
    done = sync(stage, owner, home, str(root), kb, "--wait", "--json")
    assert done.returncode == 0, done.stderr
    assert sorted((d["action"], d["path"]) for d in json.loads(done.stdout)["done"]) == [
        ("deleted", "b.md"),
        ("replaced", "a.md"),
        ("uploaded", "方案/e.md"),
    ]
    after = tree(stage, owner, kb)
    assert sorted(after) == ["a.md", "c.txt", "方案/d.md", "方案/e.md"]
    assert (after["a.md"]["id"], after["a.md"]["version"]) == (files["a.md"]["id"], 2)

    # When the folder is emptied, then nothing is deleted without --yes
    for path in sorted(root.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    refused = sync(stage, owner, home, str(root), kb)
    assert refused.returncode == 1
    assert "nothing was changed: the folder is empty; run again with --yes" in refused.stdout
    assert len(tree(stage, owner, kb)) == 4
    emptied = sync(stage, owner, home, str(root), kb, "--yes")
    assert emptied.returncode == 0, emptied.stderr
    assert tree(stage, owner, kb) == {}


def test_a_linked_folder_picks_up_a_new_file_and_a_killed_service_converges_without_duplicates(
    stage: Stage, tmp_path: Path
) -> None:
    # Given a KB and a folder of many files
    owner = stage.user(f"link-{uuid.uuid4().hex[:8]}", name="Owner").token
    kb_name = stage.kb_name("链接")
    kb = ok_json(stage, owner, "kb", "create", kb_name)["id"]
    root = tmp_path / "linked"
    for index in range(FILES):
        write(root, f"part-{index // 10}/note-{index:02d}.md", f"# note {index}\n")

    # When the folder is linked, and the desktop service killed (no clean stop) once the first files are in
    process, desktop = start_desktop(tmp_path, stage.api_url)
    try:
        login = desktop.cli("login", "--token", "-", stdin=owner + "\n")
        assert login.returncode == 0, login.stderr
        linked = desktop.cli("link", str(root), kb, "--json")
        assert linked.returncode == 0, linked.stderr
        # (mid-sync)
        wait_until(lambda: tree(stage, owner, kb), timeout=60, message="the first files to arrive")
    finally:
        process.kill()
        process.wait()
    assert len(tree(stage, owner, kb)) < FILES, "the pass was over before the kill: nothing to resume"

    # Then, started again on the same home, the link and the login are kept, the pass resumes and converges
    process, again = start_desktop(tmp_path, stage.api_url)
    try:

        def all_there() -> bool:
            return len(tree(stage, owner, kb)) == FILES

        wait_until(all_there, timeout=120, message="the linked folder to converge after the restart")
        files = tree(stage, owner, kb)
        assert sorted(files) == sorted(f"part-{i // 10}/note-{i:02d}.md" for i in range(FILES))

        # When a new file appears, then it is picked up within seconds
        write(root, "part-0/new.md", "# new\n")
        wait_until(
            lambda: "part-0/new.md" in tree(stage, owner, kb), timeout=20, message="the new file"
        )
        listed = again.cli("links")
        assert listed.returncode == 0, listed.stderr
        assert f"{root} -> “{kb_name}”: " in listed.stdout
        status = again.cli("status")
        assert "linked:" in status.stdout
    finally:
        assert stop_stack(process) == 0, again.log_path.read_text()

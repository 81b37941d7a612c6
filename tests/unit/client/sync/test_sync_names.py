"""The sync applies the service's naming locally (docs/sync.md): two files the KB would name alike (trimmed,
NFC) are one, the second skipped naming the first, the same one on every desktop; a file nested deeper than
a KB's folders go is skipped up front; a KB name stored in another form is found where it belongs."""

from __future__ import annotations

import hashlib
import unicodedata
from pathlib import Path

from memmy_kb.domain.knowledge_bases.folders import MAX_FOLDER_DEPTH as SERVICE_DEPTH
from memmy_kb_client.sync.local import FolderScan, Seen
from memmy_kb_client.sync.names import MAX_FOLDER_DEPTH, kb_path, name_refused, twin_names
from memmy_kb_client.sync.plan import plan_pass
from memmy_kb_client.sync.remote import Entry, Tree, read_tree
from memmy_kb_client.sync.run import run_pass
from memmy_kb_client.sync.store import Memory, Synced, SyncStore
from tests.support.fake_kb import FakeKb

NFC = unicodedata.normalize("NFC", "café.md")
NFD = unicodedata.normalize("NFD", "café.md")


def scan(*paths: str) -> FolderScan:
    return FolderScan(True, {p: Seen(p, 10, 1) for p in paths}, {})


def synced_file(file_id: str, name: str, sha: str, folder: str = "") -> Entry:
    return Entry(
        id=file_id, name=name, folder=folder, folder_id=None, status="available", version=1, sha256=sha,
        upload_id=f"up_{file_id}", origin="sync",
    )


def no_memory() -> Memory:
    return Memory({}, {}, {}, {})


def test_a_local_path_is_named_as_the_service_stores_it() -> None:
    assert kb_path(f" notes /{NFD}") == f"notes/{NFC}"
    assert kb_path(" /a.md") is None


def test_twins_that_the_kb_would_name_alike_sync_the_one_already_in_its_form_and_skip_the_other() -> None:
    plan = plan_pass(
        scan(" lead.md", "lead.md", NFD, NFC, "other.md"),
        {" lead.md": "a", "lead.md": "b", NFD: "c", NFC: "d", "other.md": "e"},
        Tree({}, [], 1),
        no_memory(),
    )

    assert sorted(s.path for s in plan.uploads) == sorted(["lead.md", NFC, "other.md"])
    skipped = {s.path: s.reason for s in plan.skips}
    assert set(skipped) == {" lead.md", NFD}
    assert "'lead.md'" in skipped[" lead.md"]
    assert repr(NFC) in skipped[NFD]


def test_every_desktop_picks_the_same_twin_whatever_it_synced_before() -> None:
    # A desktop that synced " lead.md" before the rule: it now keeps "lead.md", as a fresh desktop does,
    # so two desktops no longer replace one file back and forth.
    assert twin_names([" lead.md", "lead.md"]) == {" lead.md": "lead.md"}
    assert twin_names(["lead.md", " lead.md"]) == {" lead.md": "lead.md"}
    assert twin_names([" a.md", "a.md "]) == {"a.md ": " a.md"}  # neither in the KB's form: by code point
    assert twin_names(["a.md", "b.md"]) == {}

    kb = Tree({}, [synced_file("f1", "lead.md", "old")], 1)
    memory = Memory({" lead.md": Synced("f1", 1, "old")}, {}, {}, {})
    plan = plan_pass(scan(" lead.md", "lead.md"), {" lead.md": "x", "lead.md": "y"}, kb, memory)

    assert [(s.path, s.file_id) for s in plan.replaces] == [("lead.md", "f1")]
    assert [s.path for s in plan.skips] == [" lead.md"]
    assert plan.deletes == []


def test_a_file_deeper_than_a_kbs_folders_go_is_skipped_up_front_with_why() -> None:
    assert MAX_FOLDER_DEPTH == SERVICE_DEPTH
    deepest_allowed = "/".join(f"d{i}" for i in range(MAX_FOLDER_DEPTH)) + "/ok.md"
    too_deep = "/".join(f"d{i}" for i in range(MAX_FOLDER_DEPTH + 1)) + "/deep.md"

    plan = plan_pass(scan(deepest_allowed, too_deep), {deepest_allowed: "a", too_deep: "b"}, Tree({}, [], 1), no_memory())

    assert [s.path for s in plan.uploads] == [deepest_allowed]
    [skip] = plan.skips
    assert skip.path == too_deep
    assert skip.reason == name_refused(too_deep)
    assert f"{MAX_FOLDER_DEPTH + 1} levels" in skip.reason
    assert len(plan.folders) == MAX_FOLDER_DEPTH  # no folder made for the one skipped


class _Listing:
    def __init__(self) -> None:
        self.calls = 0

    def list_files(self, kb_id: str, folder_id: str | None = None) -> dict[str, object]:
        if folder_id is None:
            return {"folders": [{"id": "fo_cafe", "name": unicodedata.normalize("NFD", "café")}], "files": []}
        return {"folders": [], "files": [{"id": "fi_1", "name": NFD, "status": "available", "version": 1,
                                          "sha256": "s", "upload_id": "up_1", "origin": "sync"}]}


def test_a_kb_folder_and_file_named_in_nfd_before_are_found_at_the_nfc_path_and_not_made_again() -> None:
    kb = read_tree(_Listing(), "kb_1")
    local = f"{unicodedata.normalize('NFD', 'café')}/{NFD}"

    plan = plan_pass(scan(local), {local: "s"}, kb, no_memory())

    assert plan.folders == []
    assert plan.uploads == []
    assert [s.kind for s in plan.records] == ["record"]  # taken over, its bytes the same


def test_two_desktops_with_twin_names_leave_one_file_at_its_first_version(tmp_path: Path) -> None:
    # Given two desktops whose folders both hold " lead.md" and "lead.md", with different text
    kb = FakeKb()
    desktops = []
    for name in ("one", "two"):
        root = tmp_path / name
        root.mkdir()
        (root / " lead.md").write_text("the spaced one", encoding="utf-8")
        (root / "lead.md").write_text("the plain one", encoding="utf-8")
        desktops.append((root, SyncStore(":memory:")))

    # When each syncs twice, in turn
    for _ in range(2):
        for root, store in desktops:
            result = run_pass(kb, store, kb.kb_id, root, lock_dir=tmp_path / "locks", send=kb.send)
            kb.ingest()
            assert [s.path for s in result.plan.skips] == [" lead.md"]

    # Then the KB holds one lead.md, the plain one's, never replaced back and forth
    assert kb.paths() == {"lead.md": (1, hashlib.sha256(b"the plain one").hexdigest())}

"""The sync's plan, a pure function of the folder, the KB and the sync's memory (docs/sync.md): new files
uploaded, changed ones (by hash) replaced, gone ones deleted only when this folder's sync brought them in,
skips with their reason, the deletion threshold, and an interrupted upload or replace found again by its
upload id instead of being sent twice."""

from __future__ import annotations

from typing import Any

from memmy_kb_client.sync.local import FolderScan, Seen
from memmy_kb_client.sync.names import name_refused
from memmy_kb_client.sync.plan import Plan, plan_pass
from memmy_kb_client.sync.remote import Entry, Tree
from memmy_kb_client.sync.store import Failed, Memory, NoRoom, Pending, Synced


def folder(*paths: str, skipped: dict[str, str] | None = None, exists: bool = True) -> FolderScan:
    return FolderScan(exists, {p: Seen(p, 10, 1) for p in paths}, skipped or {})


def file(
    file_id: str, path: str, sha: str, *, version: int = 1, origin: str | None = "sync", **more: Any
) -> Entry:
    folder_path, _, name = path.rpartition("/")
    return Entry(
        id=file_id,
        name=name,
        folder=folder_path,
        folder_id=None,
        status=more.pop("status", "available"),
        version=version,
        sha256=sha,
        upload_id=more.pop("upload_id", f"up_{file_id}"),
        origin=origin,
        **more,
    )


def upload_entry(upload_id: str, path: str, status: str = "uploading", reason: str | None = None) -> Entry:
    return Entry(
        id=upload_id, name=path, folder="", folder_id=None, status=status, upload_id=upload_id, reason=reason
    )


def tree(*entries: Entry, folders: dict[str, str] | None = None) -> Tree:
    return Tree(folders or {}, list(entries), 1)


def memory(
    synced: dict[str, Synced] | None = None,
    pending: dict[str, Pending] | None = None,
    failed: dict[str, Failed] | None = None,
    **more: Any,
) -> Memory:
    return Memory(synced or {}, pending or {}, failed or {}, {}, **more)


def kinds(plan: Plan) -> dict[str, list[str]]:
    return {
        name: [s.path for s in steps]
        for name, steps in (
            ("upload", plan.uploads),
            ("replace", plan.replaces),
            ("delete", plan.deletes),
            ("skip", plan.skips),
            ("resume", plan.resumes),
            ("wait", plan.waiting),
        )
        if steps
    }


def test_new_files_are_uploaded_changed_ones_replaced_by_hash_and_gone_ones_deleted() -> None:
    # Given a KB holding what the sync brought in: keep.md and also.md (same bytes), edit.md (changed),
    # gone.md (deleted from the folder)
    kb = tree(
        file("f1", "keep.md", "k"),
        file("f2", "edit.md", "e1", version=3),
        file("f3", "gone.md", "g"),
        file("f4", "also.md", "a"),
    )
    synced = {
        "keep.md": Synced("f1", 1, "k"),
        "edit.md": Synced("f2", 3, "e1"),
        "gone.md": Synced("f3", 1, "g"),
        "also.md": Synced("f4", 1, "a"),
    }
    scan = folder("keep.md", "also.md", "edit.md", "sub/new.md", skipped={"photo.png": "unsupported type"})

    # When a pass is planned
    hashes = {"keep.md": "k", "also.md": "a", "edit.md": "e2", "sub/new.md": "n"}
    plan = plan_pass(scan, hashes, kb, memory(synced))

    # Then exactly those three changes, and the unsupported file skipped

    assert kinds(plan) == {
        "upload": ["sub/new.md"],
        "replace": ["edit.md"],
        "delete": ["gone.md"],
        "skip": ["photo.png"],
    }
    assert (plan.replaces[0].file_id, plan.replaces[0].version) == ("f2", 3)  # if_version: the KB's
    assert plan.folders == ["sub"]
    assert plan.confirm is None


def test_a_file_whose_date_changed_but_not_its_bytes_is_left_alone() -> None:
    kb = tree(file("f1", "a.md", "same"))
    plan = plan_pass(folder("a.md"), {"a.md": "same"}, kb, memory({"a.md": Synced("f1", 1, "same")}))
    assert plan.changes == 0
    assert plan.records == []


def test_a_file_uploaded_by_other_means_is_never_replaced_or_deleted() -> None:
    # Given report.md uploaded from the page, and notes.md whose synced file was deleted by hand and then
    # uploaded by hand again under the same name
    kb = tree(file("h1", "report.md", "theirs", origin=None), file("h2", "notes.md", "n", origin=None))
    synced = {"notes.md": Synced("gone", 1, "n")}

    # When the folder has another report.md and no notes.md
    plan = plan_pass(folder("report.md"), {"report.md": "mine"}, kb, memory(synced))

    # Then report.md is skipped with its reason, and the hand-made notes.md is not deleted: only forgotten
    assert kinds(plan) == {"skip": ["report.md"]}
    assert "not uploaded by a sync" in plan.skips[0].reason
    assert [(s.kind, s.path) for s in plan.records] == [("forget", "notes.md")]


def test_a_file_another_desktop_synced_is_adopted_and_replaced_when_its_bytes_differ() -> None:
    kb = tree(file("s1", "same.md", "x"), file("s2", "differs.md", "old", version=2))
    plan = plan_pass(folder("same.md", "differs.md"), {"same.md": "x", "differs.md": "new"}, kb, memory())
    assert kinds(plan) == {"replace": ["differs.md"]}
    assert (plan.replaces[0].file_id, plan.replaces[0].version) == ("s2", 2)
    assert [(s.kind, s.path, s.file_id) for s in plan.records] == [("record", "same.md", "s1")]


def test_deleting_up_to_a_quarter_of_the_synced_files_needs_no_confirmation() -> None:
    kb = tree(*(file(f"f{i}", f"{i}.md", "h") for i in range(4)))
    synced = {f"{i}.md": Synced(f"f{i}", 1, "h") for i in range(4)}
    one_gone = plan_pass(
        folder("1.md", "2.md", "3.md"), dict.fromkeys(["1.md", "2.md", "3.md"], "h"), kb, memory(synced)
    )
    two_gone = plan_pass(folder("2.md", "3.md"), dict.fromkeys(["2.md", "3.md"], "h"), kb, memory(synced))
    assert (len(one_gone.deletes), one_gone.confirm) == (1, None)
    assert len(two_gone.deletes) == 2
    assert two_gone.confirm == "it would delete 2 of the 4 files this folder's sync brought in"


def test_deletions_since_the_last_confirmation_count_with_this_passs() -> None:
    # Given 15 synced files, after 5 deleted since the last confirmation
    kb = tree(*(file(f"f{i}", f"{i}.md", "h") for i in range(15)))
    synced = {f"{i}.md": Synced(f"f{i}", 1, "h") for i in range(15)}
    left = [f"{i}.md" for i in range(1, 15)]

    # When one more is gone: 6 of 20 since then, over a quarter; and with no earlier deletion, 1 of 15
    after_five = plan_pass(folder(*left), dict.fromkeys(left, "h"), kb, memory(synced, deleted=5))
    first = plan_pass(folder(*left), dict.fromkeys(left, "h"), kb, memory(synced))

    assert after_five.confirm == (
        "it would delete 1 of the 15 files this folder's sync brought in, 6 of 20 since the last confirmation"
        " (5 deleted already)"
    )
    assert after_five.summary()["deleted_since_confirmation"] == 5
    assert first.confirm is None


def test_while_the_kb_has_no_room_what_it_would_refuse_is_held_not_asked_for() -> None:
    kb = tree(file("f1", "edit.md", "old"))
    synced = {"edit.md": Synced("f1", 1, "old")}
    scan, hashes = folder("edit.md", "new.md"), {"edit.md": "new", "new.md": "n"}
    files_full = memory(synced, no_room=NoRoom("kb_file_limit_reached", 1000, 10, 0.0))
    storage_full = memory(synced, no_room=NoRoom("kb_storage_limit_reached", 1000, 10, 0.0))

    # A full file count holds the upload; full storage, the replace too
    assert kinds(plan_pass(scan, hashes, kb, files_full)) == {"replace": ["edit.md"]}
    assert [s.path for s in plan_pass(scan, hashes, kb, files_full).held] == ["new.md"]
    held = plan_pass(scan, hashes, kb, storage_full)
    assert (kinds(held), sorted(s.path for s in held.held)) == ({}, ["edit.md", "new.md"])
    assert held.summary()["wait_for_room"] == [{"path": "new.md"}, {"path": "edit.md"}]


def test_a_version_the_engine_failed_at_the_folders_bytes_is_replaced_once_then_shown_failed() -> None:
    why = "The knowledge engine could not process this version; the previous version still answers."
    kb = tree(file("f1", "a.md", "new", version=2, status="failed", reason=why))
    synced = {"a.md": Synced("f1", 2, "new")}

    once = plan_pass(folder("a.md"), {"a.md": "new"}, kb, memory(synced))
    after = plan_pass(folder("a.md"), {"a.md": "new"}, kb, memory(synced, resent={"a.md": "new"}))
    other_bytes = plan_pass(folder("a.md"), {"a.md": "newer"}, kb, memory(synced, resent={"a.md": "new"}))

    assert (kinds(once), once.replaces[0].resend, once.replaces[0].version) == ({"replace": ["a.md"]}, True, 2)
    assert (kinds(after), after.summary()["failed"]) == ({}, [{"path": "a.md", "reason": why}])
    assert (kinds(other_bytes), other_bytes.replaces[0].resend) == ({"replace": ["a.md"]}, False)


def test_an_empty_or_missing_folder_always_asks_whatever_the_share() -> None:
    kb = tree(*(file(f"f{i}", f"{i}.md", "h") for i in range(10)))
    synced = {f"{i}.md": Synced(f"f{i}", 1, "h") for i in range(10)}
    empty = plan_pass(folder(), {}, kb, memory(synced), delete_share=1.0)
    missing = plan_pass(folder(exists=False), {}, kb, memory(synced), delete_share=1.0)
    assert (len(empty.deletes), empty.confirm) == (10, "the folder is empty")
    assert missing.confirm == "the folder is missing (an unmounted disk?)"


def test_a_rejected_file_is_not_sent_again_until_its_bytes_change() -> None:
    failed = {"bad.pdf": Failed("h1", "The file is not a valid PDF.", "up_old")}
    kb = tree(upload_entry("up_old", "bad.pdf", "failed", "The file is not a valid PDF."))
    same = plan_pass(folder("bad.pdf"), {"bad.pdf": "h1"}, kb, memory(failed=failed))
    fixed = plan_pass(folder("bad.pdf"), {"bad.pdf": "h2"}, kb, memory(failed=failed))
    assert kinds(same) == {"skip": ["bad.pdf"]}
    assert "not a valid PDF" in same.skips[0].reason
    assert kinds(fixed) == {"upload": ["bad.pdf"]}
    assert fixed.uploads[0].upload_id == "up_old"  # the failed one, dismissed once the new one is sent


def test_a_file_still_changing_while_read_waits_for_the_next_pass() -> None:
    plan = plan_pass(folder("busy.md"), {}, tree(), memory())
    assert kinds(plan) == {"skip": ["busy.md"]}


def test_an_upload_sent_before_an_interruption_is_waited_for_not_sent_again() -> None:
    pending = {"a.md": Pending("upload", "k1", "h", 10, upload_id="up_1", posted=True)}
    plan = plan_pass(
        folder("a.md"), {"a.md": "h"}, tree(upload_entry("up_1", "a.md")), memory(pending=pending)
    )
    assert kinds(plan) == {"wait": ["a.md"]}


def test_an_upload_asked_for_but_not_sent_is_resumed_with_its_own_key() -> None:
    for upload_id, shown in (("up_1", [upload_entry("up_1", "a.md")]), (None, [])):
        pending = {"a.md": Pending("upload", "k1", "h", 10, upload_id=upload_id)}
        plan = plan_pass(folder("a.md"), {"a.md": "h"}, tree(*shown), memory(pending=pending))
        assert kinds(plan) == {"resume": ["a.md"]}
        assert plan.resumes[0].pending == pending["a.md"]


def test_an_upload_that_became_a_file_is_recorded_and_not_uploaded_again() -> None:
    pending = {"a.md": Pending("upload", "k1", "h", 10, upload_id="up_1", posted=True)}
    kb = tree(file("f9", "a.md", "h", upload_id="up_1"))
    plan = plan_pass(folder("a.md"), {"a.md": "h"}, kb, memory(pending=pending))
    assert plan.changes == 0
    assert [(s.kind, s.file_id, s.version) for s in plan.records] == [("record", "f9", 1)]


def test_an_upload_whose_ticket_expired_unused_or_whose_file_changed_is_decided_afresh() -> None:
    expired = {"a.md": Pending("upload", "k1", "h", 10, upload_id="up_1")}
    plan = plan_pass(folder("a.md"), {"a.md": "h"}, tree(), memory(pending=expired))
    assert kinds(plan) == {"upload": ["a.md"]}
    assert [s.kind for s in plan.records] == ["drop"]


def test_an_upload_sent_but_listed_nowhere_is_waited_for_a_while_then_decided_afresh() -> None:
    # A listing may read the KB while the cloud records the upload as its file: neither shows. Uploaded
    # again at once, it would become a second file.
    sent = {"a.md": Pending("upload", "k1", "h", 10, upload_id="up_1", posted=True, started_at=1000.0)}
    soon = plan_pass(folder("a.md"), {"a.md": "h"}, tree(), memory(pending=sent), now=1010.0)
    assert kinds(soon) == {"wait": ["a.md"]}
    assert soon.records == []
    later = plan_pass(folder("a.md"), {"a.md": "h"}, tree(), memory(pending=sent), now=1000.0 + 601)
    assert kinds(later) == {"upload": ["a.md"]}
    assert [s.kind for s in later.records] == ["drop"]


def test_a_rejected_pending_upload_is_remembered_as_failed() -> None:
    pending = {"a.md": Pending("upload", "k1", "h", 10, upload_id="up_1", posted=True)}
    kb = tree(upload_entry("up_1", "a.md", "failed", "The file is not valid UTF-8."))
    plan = plan_pass(folder("a.md"), {"a.md": "h"}, kb, memory(pending=pending))
    assert kinds(plan) == {"skip": ["a.md"]}
    assert [(s.kind, s.reason) for s in plan.records] == [("fail", "The file is not valid UTF-8.")]


def test_a_replace_in_flight_is_waited_for_and_a_recorded_one_is_taken_as_done() -> None:
    synced = {"a.md": Synced("f1", 1, "old")}
    pending = {
        "a.md": Pending("replace", "k1", "new", 10, upload_id="up_2", file_id="f1", if_version=1, posted=True)
    }
    in_flight = tree(file("f1", "a.md", "old", replacement={"upload_id": "up_2", "status": "uploading"}))
    recorded = tree(file("f1", "a.md", "new", version=2, upload_id="up_2"))
    assert kinds(plan_pass(folder("a.md"), {"a.md": "new"}, in_flight, memory(synced, pending))) == {
        "wait": ["a.md"]
    }
    done = plan_pass(folder("a.md"), {"a.md": "new"}, recorded, memory(synced, pending))
    assert done.changes == 0
    assert [(s.kind, s.version) for s in done.records] == [("record", 2)]


def test_a_file_being_replaced_by_someone_else_waits_for_the_next_pass() -> None:
    kb = tree(file("f1", "a.md", "old", replacement={"upload_id": "up_x", "status": "uploading"}))
    plan = plan_pass(folder("a.md"), {"a.md": "new"}, kb, memory({"a.md": Synced("f1", 1, "old")}))
    assert kinds(plan) == {"skip": ["a.md"]}


def test_a_synced_file_deleted_from_the_kb_by_hand_is_uploaded_again() -> None:
    plan = plan_pass(folder("a.md"), {"a.md": "h"}, tree(), memory({"a.md": Synced("f1", 1, "h")}))
    assert kinds(plan) == {"upload": ["a.md"]}
    assert [s.kind for s in plan.records] == ["forget"]


def test_sub_folders_map_to_kb_folders_and_only_missing_ones_are_made_parents_first() -> None:
    scan = folder("a/b/c.md", "a/d.md", "x/y.md")
    plan = plan_pass(scan, dict.fromkeys(scan.files, "h"), tree(folders={"a": "fo_a"}), memory())
    assert plan.folders == ["x", "a/b"]


def test_files_under_a_folder_that_could_not_be_read_are_kept_not_deleted() -> None:
    # Given six synced files, three of them in locked/, and one.md whose type could not be read
    names = ["a.md", "b.md", "one.md", "locked/x.md", "locked/y.md", "locked/deep/z.md"]
    kb = tree(*(file(f"f{i}", name, "h") for i, name in enumerate(names)))
    synced = {name: Synced(f"f{i}", 1, "h") for i, name in enumerate(names)}
    why = "could not be read (Permission denied): what it holds is kept"
    scan = FolderScan(True, {"a.md": Seen("a.md", 10, 1)}, {}, {"locked": why, "one.md": why})

    # When a pass is planned (b.md really is gone)
    plan = plan_pass(scan, {"a.md": "h"}, kb, memory(synced))

    # Then only b.md is deleted; what could not be read is kept and said
    assert kinds(plan) == {"delete": ["b.md"], "skip": ["locked", "one.md"]}
    assert plan.skips[0].reason == why
    assert plan.confirm is None


def test_a_folder_that_could_not_be_read_at_all_deletes_nothing() -> None:
    kb = tree(*(file(f"f{i}", f"{i}.md", "h") for i in range(3)))
    synced = {f"{i}.md": Synced(f"f{i}", 1, "h") for i in range(3)}
    scan = FolderScan(True, {}, {}, {"": "could not be read (Input/output error): what it holds is kept"})
    plan = plan_pass(scan, {}, kb, memory(synced))
    assert kinds(plan) == {"skip": ["."]}


def test_names_the_service_would_refuse_are_skipped_not_sent_at_every_pass() -> None:
    # Given paths whose folder or file name the service refuses: a zero-width joiner (an emoji family),
    # a folder name over 100 characters, a bidi override, a backslash, and a file name over 255
    family, long_folder = "\U0001f468\u200d\U0001f469\u200d\U0001f467 family", "x" * 101
    refused = [f"{family}/a.md", f"{long_folder}/b.md", "c\u202egpj.md", "d\\e.md", "y" * 253 + ".md"]
    scan = folder(*refused, "ok/f.md", "z" * 252 + ".md")

    plan = plan_pass(scan, dict.fromkeys(scan.files, "h"), tree(), memory())

    # Then only the others are uploaded, and only their folder is made
    assert kinds(plan) == {"upload": ["ok/f.md", "z" * 252 + ".md"], "skip": sorted(refused)}
    assert plan.folders == ["ok"]
    reasons = {s.path: s.reason for s in plan.skips}
    assert reasons[f"{family}/a.md"] == (
        "a folder name holds a control, invisible or unassigned character, which the service refuses"
    )
    assert reasons[f"{long_folder}/b.md"] == "a folder name is over 100 characters, the service's limit"
    assert reasons["d\\e.md"] == "a file name holds a backslash, which the service refuses"


def test_the_names_refused_are_the_ones_the_service_refuses() -> None:
    from pydantic import TypeAdapter, ValidationError

    from memmy_kb.api.models.base import Name
    from memmy_kb.api.models.uploads import Filename

    def takes(kind: Any, value: str) -> bool:
        try:
            TypeAdapter(kind).validate_python(value)
        except ValidationError:
            return False
        return True

    samples = [
        "a.md",
        " padded.md ",
        "é.md",
        "e\u0301\u0301\u0301.md",
        "e\u0301\u0301\u0301\u0301.md",
        "tab\there.md",
        "zw\u200bj.md",
        "bidi\u202e.md",
        "line\u2028.md",
        "back\\slash.md",
        "私.md",
        "x" * 100,
        "x" * 101,
        "y" * 255,
        "y" * 256,
        "\U0001f468\u200d\U0001f469",
        "\ue000private.md",
        "\U0001f600.md",
    ]
    for sample in samples:
        assert (name_refused(sample) is None) == takes(Filename, sample), sample
        assert (name_refused(f"{sample}/a.md") is None) == takes(Name, sample), sample

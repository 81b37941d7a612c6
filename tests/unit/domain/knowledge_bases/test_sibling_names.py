"""``memmy_kb.domain.knowledge_bases.sibling_names``: names stored trimmed and in NFC, and one name per folder, for files
(an upload asked for, checked again at the ingest, a move) and folders (created, renamed, moved)."""

from __future__ import annotations

import unicodedata
from http import HTTPStatus

import pytest

from memmy_kb.domain.knowledge_bases import files as files_logic
from memmy_kb.domain.knowledge_bases import folders
from memmy_kb.domain.knowledge_bases.sibling_names import NAME_RACED, NAME_TAKEN, normal_name
from memmy_kb.domain.uploads import delivery, ingest, issuing
from memmy_kb.errors import Conflict
from memmy_kb.records import KbCapacity
from tests.support.domain import kb, refused
from tests.support.factories import T0, file_record, folder_record, upload_record
from tests.support.fakes import FakeKnowledgeEngine, FakeStores, FakeUploadObjects

__all__ = ["kb"]

NFC = unicodedata.normalize("NFC", "café.md")
NFD = unicodedata.normalize("NFD", "café.md")
TAKEN = (HTTPStatus.CONFLICT, "name_taken")
ROOM = KbCapacity(max_files=10, max_bytes=10_000)
TEXT = b"# notes\n\nThe checklist is reviewed on Mondays.\n"


class Bucket:
    def presign_post(self, key: str, **_: object) -> object:
        return {"url": "https://bucket.test", "fields": {"key": key}}


def ask(stores: FakeStores, filename: str, folder_id: str | None = None, upload_id: str = "up_new") -> issuing.IssuedUpload:
    return issuing.request_upload(
        stores.kbs,
        stores.contents,
        Bucket(),  # type: ignore[arg-type]
        user_id="alice",
        kb_id="kb_1",
        filename=filename,
        size_bytes=len(TEXT),
        content_type=None,
        folder_id=folder_id,
        post_ttl_seconds=600,
        capacity=ROOM,
        clock=lambda: T0,
        new_id=lambda: upload_id,
    )


def test_a_name_is_compared_and_stored_in_nfc_without_surrounding_space() -> None:
    assert NFC != NFD
    assert normal_name(NFD) == NFC
    assert normal_name("  lead.md\t") == "lead.md"


# -- uploads ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("asked", [" lead.md", "lead.md "])
def test_given_a_file_when_an_upload_of_its_name_trimmed_is_asked_for_then_409_names_the_file(
    kb: FakeStores, asked: str
) -> None:
    kb.table.seed(file_record("fi_lead", name="lead.md"))

    with pytest.raises(Conflict) as err:
        ask(kb, asked)

    assert (err.value.status, err.value.code) == TAKEN
    assert err.value.details == {"kind": "file", "id": "fi_lead", "name": "lead.md"}
    assert kb.contents.query_kb_items("kb_1")[2] == []  # nothing recorded


def test_given_an_nfc_name_when_its_nfd_twin_is_asked_for_then_409_and_a_new_name_is_stored_in_nfc(
    kb: FakeStores,
) -> None:
    kb.table.seed(file_record("fi_cafe", name=NFC))

    assert refused(lambda: ask(kb, NFD)) == TAKEN
    assert ask(kb, unicodedata.normalize("NFD", "thé.md")).upload.filename == unicodedata.normalize("NFC", "thé.md")


def test_given_a_file_when_its_name_is_asked_for_in_another_folder_or_in_other_case_then_it_is_taken(
    kb: FakeStores,
) -> None:
    kb.table.seed(folder_record("fo_docs"), file_record("fi_lead", name="lead.md"))

    assert ask(kb, "lead.md", folder_id="fo_docs").upload.folder_id == "fo_docs"
    assert ask(kb, "Lead.md", upload_id="up_case").upload.filename == "Lead.md"


def test_an_upload_past_its_checks_holds_its_name_and_one_merely_asked_for_does_not(kb: FakeStores) -> None:
    kb.table.seed(
        upload_record("up_held", filename="held.md", state="submitting"),
        upload_record("up_asked", filename="asked.md", state="pending"),
        upload_record("up_repl", filename="repl.md", state="submitting").model_copy(update={"replaces": "fi_x"}),
    )

    with pytest.raises(Conflict) as err:
        ask(kb, "held.md")
    assert err.value.details == {"kind": "upload", "id": "up_held", "name": "held.md"}
    # An upload whose POST may never be used does not keep its name from a second try; a replace is no name.
    assert ask(kb, "asked.md", upload_id="up_again").upload.upload_id == "up_again"
    assert ask(kb, "repl.md", upload_id="up_r").upload.upload_id == "up_r"


# -- the ingest checks again ---------------------------------------------------------------------------


def _ingest(stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, upload_id: str) -> ingest.IngestOutcome:
    config = ingest.IngestConfig(
        inline_max_bytes=1024, get_url_ttl_seconds=120, capacity=ROOM, activity_retention_days=30
    )
    return delivery.ingest_object(
        stores.kbs, stores.contents, objects, memos, f"uploads/kb_1/{upload_id}", config=config, clock=lambda: T0  # type: ignore[arg-type]
    )


def _sent(stores: FakeStores, objects: FakeUploadObjects, upload_id: str, filename: str) -> None:
    memos_kb = stores.kbs.get_kb("kb_1").memos_kb_id  # type: ignore[union-attr]
    stores.table.seed(
        upload_record(upload_id, filename=filename, size_bytes=len(TEXT), created_at=T0).model_copy(
            update={"memos_kb_id": memos_kb}
        )
    )
    objects.put(f"uploads/kb_1/{upload_id}", TEXT)


def test_two_uploads_of_one_name_asked_for_at_once_become_one_file_and_the_other_fails_with_why(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    objects = FakeUploadObjects()
    first, second = ask(kb, "lead.md", upload_id="up_1"), ask(kb, " lead.md", upload_id="up_2")
    for issued in (first, second):
        _sent(kb, objects, issued.upload.upload_id, issued.upload.filename)

    outcomes = [_ingest(kb, objects, memos, "up_1"), _ingest(kb, objects, memos, "up_2")]

    assert [o.result for o in outcomes] == ["submitted", "rejected"]
    assert outcomes[1].reason == NAME_TAKEN
    assert [f.name for f in kb.contents.query_kb_items("kb_1")[1]] == ["lead.md"]
    assert len(memos.inputs) == 1  # the second never reached MemOS


def test_an_upload_held_while_another_of_its_name_is_held_is_rejected_before_memos_is_called(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    objects = FakeUploadObjects()
    _sent(kb, objects, "up_2", "lead.md")
    kb.table.seed(upload_record("up_1", filename="lead.md", state="submitting"))

    outcome = _ingest(kb, objects, memos, "up_2")

    assert (outcome.result, outcome.reason) == ("rejected", NAME_RACED)
    assert memos.inputs == []
    assert kb.contents.get_upload("kb_1", "up_2").state == "rejected"  # type: ignore[union-attr]


# -- moves and folders ---------------------------------------------------------------------------------


def test_given_a_file_when_another_of_its_name_is_moved_into_its_folder_then_409_and_nothing_moves(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    kb.table.seed(
        folder_record("fo_docs"),
        file_record("fi_there", name=NFC, folder_id="fo_docs"),
        file_record("fi_moving", name=NFD),
    )

    with pytest.raises(Conflict) as err:
        files_logic.move_file(kb.kbs, kb.contents, memos, "alice", "kb_1", "fi_moving", "fo_docs")

    assert err.value.details == {"kind": "file", "id": "fi_there", "name": NFC}
    assert kb.contents.get_file("kb_1", "fi_moving").folder_id is None  # type: ignore[union-attr]


def _create(kb: FakeStores, name: str, parent_id: str | None = None, folder_id: str = "fo_new") -> object:
    return folders.create_folder(
        kb.kbs, kb.contents, "alice", "kb_1", name, parent_id, clock=lambda: T0, new_id=lambda: folder_id
    )


def test_a_folder_name_a_sibling_has_once_normalised_is_refused_on_create_rename_and_move(kb: FakeStores) -> None:
    kb.table.seed(
        folder_record("fo_a", name=NFC.removesuffix(".md")),
        folder_record("fo_b", name="notes"),
        folder_record("fo_sub", name="notes", parent_id="fo_a"),
    )
    nfd = NFD.removesuffix(".md")

    assert refused(lambda: _create(kb, nfd)) == TAKEN
    assert refused(lambda: _create(kb, " notes ")) == TAKEN
    assert refused(
        lambda: folders.update_folder(kb.kbs, kb.contents, "alice", "kb_1", "fo_b", name=nfd, parent_id=None, move=False)
    ) == TAKEN
    assert refused(
        lambda: folders.update_folder(kb.kbs, kb.contents, "alice", "kb_1", "fo_b", name=None, parent_id="fo_a", move=True)
    ) == TAKEN
    # Under another parent, or renamed to its own name, it is free.
    assert _create(kb, "notes", "fo_b").name == "notes"  # type: ignore[attr-defined]
    renamed = folders.update_folder(kb.kbs, kb.contents, "alice", "kb_1", "fo_b", name=" notes", parent_id=None, move=False)
    assert renamed.name == "notes"

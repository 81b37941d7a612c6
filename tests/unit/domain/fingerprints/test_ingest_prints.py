"""The ingest keeps each recorded file version's fingerprints (``memmy_kb.domain.fingerprints.file_prints``), on the fakes:
an upload's version 1 when it becomes a file, a replace's next version when it is recorded; nothing for an
upload that is rejected; and a text that cannot be read, or a store that is down, never fails the ingest.
"""

from __future__ import annotations

import hashlib

import pytest

from memmy_kb.domain.engine import FileStatus
from memmy_kb.domain.fingerprints.prints import FileIndex, attribute
from memmy_kb.domain.knowledge_bases.naming import memos_file_name
from memmy_kb.domain.storage import StoreUnavailable, upload_object_key
from memmy_kb.domain.uploads import delivery, ingest
from memmy_kb.records import FileRecord, KbCapacity, KnowledgeBaseRecord
from tests.support.docgen import make_docx, make_pdf
from tests.support.factories import T0, kb_record, owner_grant_for, replacement_record, upload_record
from tests.support.fakes import FakeFingerprintStore, FakeKnowledgeEngine, FakeStores, FakeUploadObjects

REFUNDS = "Refunds are paid within fourteen days of the return reaching our warehouse."
SHIPPING = "Parcels leave the depot each weekday at four in the afternoon with a tracking number."
ROOM = KbCapacity(max_files=10, max_bytes=1_000_000)


@pytest.fixture
def objects() -> FakeUploadObjects:
    return FakeUploadObjects()


@pytest.fixture
def prints() -> FakeFingerprintStore:
    return FakeFingerprintStore()


@pytest.fixture
def kb(stores: FakeStores, memos: FakeKnowledgeEngine) -> KnowledgeBaseRecord:
    record = kb_record("kb_1", memos_kb_id=memos.create_knowledgebase("memmy:kb_1"))
    stores.table.seed(record, owner_grant_for(record))
    return record


def upload(
    stores: FakeStores,
    objects: FakeUploadObjects,
    memos: FakeKnowledgeEngine,
    prints: FakeFingerprintStore,
    kb: KnowledgeBaseRecord,
    data: bytes,
    filename: str,
    *,
    inline_max_bytes: int = 1_000_000,
) -> ingest.IngestOutcome:
    """``data`` uploaded as ``filename`` and ingested."""
    record = upload_record("up_1", filename=filename, size_bytes=len(data), created_at=T0)
    stores.table.seed(record.model_copy(update={"memos_kb_id": kb.memos_kb_id}))
    objects.put("uploads/kb_1/up_1", data)
    return _ingest(stores, objects, memos, prints, "uploads/kb_1/up_1", inline_max_bytes)


def _ingest(
    stores: FakeStores,
    objects: FakeUploadObjects,
    memos: FakeKnowledgeEngine,
    prints: FakeFingerprintStore,
    key: str,
    inline_max_bytes: int = 1_000_000,
) -> ingest.IngestOutcome:
    config = ingest.IngestConfig(
        inline_max_bytes=inline_max_bytes, get_url_ttl_seconds=120, capacity=ROOM, activity_retention_days=30
    )
    return delivery.ingest_object(
        stores.kbs, stores.contents, objects, memos, key, config=config, clock=lambda: T0, prints=prints
    )


def the_file(stores: FakeStores) -> FileRecord:
    [file] = stores.contents.query_kb_items("kb_1")[1]
    return file


def names(prints: FakeFingerprintStore, text: str) -> tuple[tuple[str, int], ...]:
    """The (file, version) the KB's fingerprints name for a hit of ``text``."""
    index = FileIndex({(p.file_id, p.version): p.prints for p in prints.query_prints("kb_1")})
    return attribute(text, [index]).files


# -- an upload becomes a file ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filename", "data"),
    [
        ("policy.md", f"# Refunds\n\n{REFUNDS}\n\n# Shipping\n\n{SHIPPING}\n".encode()),
        ("README", f"{REFUNDS}\n{SHIPPING}\n".encode()),
        ("policy.json", f'{{"refunds": "{REFUNDS}", "shipping": "{SHIPPING}"}}'.encode()),
        ("policy.docx", make_docx([("Refunds", REFUNDS), ("Shipping", SHIPPING)])),
        ("policy.pdf", make_pdf([REFUNDS, SHIPPING])),
    ],
)
def test_an_upload_recorded_as_a_file_keeps_version_1s_fingerprints(
    stores, objects, memos, prints, kb, filename, data
):
    assert upload(stores, objects, memos, prints, kb, data, filename).result == "submitted"

    file = the_file(stores)
    assert prints.versions("kb_1", file.file_id) == [1]
    assert names(prints, SHIPPING) == ((file.file_id, 1),)
    assert [p.memos_file_id for p in prints.query_prints("kb_1")] == [file.memos_file_id]  # for a hit naming it


def test_a_large_text_file_is_sampled_in_the_stream_that_verifies_it(stores, objects, memos, prints, kb):
    data = "\n".join(f"{REFUNDS} Clause {n}." for n in range(2000)).encode() + f"\n{SHIPPING}\n".encode()

    assert upload(stores, objects, memos, prints, kb, data, "terms.txt", inline_max_bytes=1024).result == "submitted"

    assert names(prints, SHIPPING + " " + REFUNDS + " Clause 7.") == ((the_file(stores).file_id, 1),)


def test_html_is_fingerprinted_as_the_markdown_memos_gets(stores, objects, memos, prints, kb):
    script = "window.trackingPixelLoadsFromTheAdvertisingNetworkEverySingleTime = true; sendBeaconNowPlease();"
    html = f"<html><head><script>{script}</script></head><body><h1>Refunds</h1><p>{REFUNDS}</p></body></html>"

    assert upload(stores, objects, memos, prints, kb, html.encode(), "policy.html").result == "submitted"

    assert names(prints, REFUNDS) == ((the_file(stores).file_id, 1),)
    assert names(prints, script) == ()


def test_a_rejected_upload_keeps_nothing(stores, objects, memos, prints, kb):
    assert upload(stores, objects, memos, prints, kb, b"\xff\xfe not text", "notes.txt").result == "rejected"
    assert prints.items == {}


def test_a_legacy_doc_is_recorded_without_fingerprints(stores, objects, memos, prints, kb):
    from tests.support.docgen import make_doc

    assert upload(stores, objects, memos, prints, kb, make_doc(REFUNDS), "old.doc").result == "submitted"
    assert prints.items == {}


def test_a_pdf_whose_text_cannot_be_read_is_still_ingested_without_fingerprints(stores, objects, memos, prints, kb):
    # Passes the verification (magic bytes and trailer), but pypdf finds no document in it.
    data = b"%PDF-1.7\n" + b"1 0 obj << >> endobj\n" * 40 + b"startxref\n0\n%%EOF\n"

    assert upload(stores, objects, memos, prints, kb, data, "scan.pdf").result == "submitted"

    assert the_file(stores).name == "scan.pdf"
    assert prints.items == {}


def test_a_fingerprint_store_that_is_down_does_not_fail_the_ingest(stores, objects, memos, prints, kb):
    prints.fail = StoreUnavailable("table", "ThrottlingException")

    assert upload(stores, objects, memos, prints, kb, REFUNDS.encode(), "notes.txt").result == "submitted"

    assert the_file(stores).name == "notes.txt"


# -- a replace records the next version ---------------------------------------------------------------------


def test_a_recorded_replace_keeps_the_next_versions_fingerprints_beside_the_current_ones(
    stores, objects, memos, prints, kb
):
    v1, v2 = f"{REFUNDS}\n".encode(), f"{SHIPPING}\n".encode()
    engine_file = memos.add_file(kb.memos_kb_id, memos_file_name("terms.md", "up_1"), FileStatus.AVAILABLE)
    file = FileRecord(
        kb_id="kb_1", file_id="fi_1", memos_file_id=engine_file.id, name="terms.md", size_bytes=len(v1),
        upload_id="up_1", uploaded_at=T0, sha256=hashlib.sha256(v1).hexdigest(), updated_at=T0,
    )
    stores.table.seed(file)
    objects.put(upload_object_key("kb_1", "up_1"), v1)
    replace = replacement_record("up_2", file, size_bytes=len(v2), created_at=T0)
    stores.contents.put_replacement(replace, take_over=None, capacity=ROOM)
    objects.put("uploads/kb_1/up_2", v2)

    assert _ingest(stores, objects, memos, prints, "uploads/kb_1/up_2").result == "submitted"

    # Version 1's stay until the reconciler sees MemOS switched (memmy_kb.domain.fingerprints.residue).
    assert prints.versions("kb_1", "fi_1") == [2]  # version 1 had none: it was seeded, not ingested
    assert names(prints, SHIPPING) == (("fi_1", 2),)
    assert [p.memos_file_id for p in prints.query_prints("kb_1")] == [engine_file.id]  # the file's, kept by a replace

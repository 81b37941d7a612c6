"""Fingerprints on the real stack: the ingest writes a recorded version's ``PRINT#`` item (S3 -> SQS ->
IngestFunction on moto), a replace adds the next version's, and the reconciler drops the old one once MemOS
answers from the new; a file's cleanup, a KB's deletion and the reconciler leave none behind. The KB's
other readers never see them. The adapter (``DynamoFingerprintStore``) runs the port's contract in store_contract/test_fingerprints.py.
"""

from __future__ import annotations

import hashlib
from array import array
from http import HTTPStatus

import pytest

from memmy_kb.adapters.dynamodb.fingerprints import DynamoFingerprintStore, print_key
from memmy_kb.adapters.dynamodb.table import dump
from memmy_kb.domain.fingerprints.prints import FileIndex, Fingerprints, attribute
from memmy_kb.domain.fingerprints.store import FilePrints
from tests.support.aws import Service
from tests.support.docgen import make_docx, make_pdf
from tests.support.polling import wait_until
from tests.support.uploads import create_kb, drain_ingest, post_file, repository, upload

REFUNDS = "Refunds are paid within fourteen days of the return reaching our warehouse."
SHIPPING = "Parcels leave the depot each weekday at four in the afternoon with a tracking number."
PRICES = "企业版的价格调整为每年两万元，含培训和全年技术支持服务。"


def prints_of(service: Service) -> DynamoFingerprintStore:
    return DynamoFingerprintStore(service.stores.table)


def versions(service: Service, kb_id: str) -> list[tuple[str, int]]:
    return sorted(prints_of(service).query_print_versions(kb_id))


def named(service: Service, kb_id: str, text: str) -> tuple[tuple[str, int], ...]:
    index = FileIndex({(p.file_id, p.version): p.prints for p in prints_of(service).query_prints(kb_id)})
    return attribute(text, [index]).files


def ingested(service: Service, name: str, data: bytes) -> tuple[str, str]:
    kb_id = create_kb(service)
    upload(service, kb_id, name, data)
    drain_ingest(service)
    [file] = repository(service).query_kb_items(kb_id)[1]
    return kb_id, file.file_id


def status(service: Service, kb_id: str) -> str:
    [entry] = service.call("GET", f"/knowledge-bases/{kb_id}/files", "alice").body["files"]
    return str(entry["status"])


# -- the adapter's layout (its contract: store_contract/test_fingerprints.py) ------------------------


def test_the_version_is_zero_padded(service):
    assert print_key("kb_1", "fi_1", 12)["SK"] == "PRINT#fi_1#000012"


def test_an_item_written_before_the_memos_id_was_kept_still_reads(service):
    prints = Fingerprints(0, array("I", [1, 2, 3]))
    item = {**print_key("kb_o", "fi_1", 1), "kb_id": "kb_o", "file_id": "fi_1", "version": 1, "prints": prints.encode()}
    service.stores.table.client.put_item(TableName=service.refs["Table"], Item=dump(item))
    assert prints_of(service).query_prints("kb_o") == [FilePrints("kb_o", "fi_1", 1, prints)]


def test_an_item_that_does_not_decode_is_left_out(service):
    item = {**print_key("kb_j", "fi_1", 1), "kb_id": "kb_j", "file_id": "fi_1", "version": 1, "prints": b"junk"}
    service.stores.table.client.put_item(TableName=service.refs["Table"], Item=dump(item))
    assert prints_of(service).query_prints("kb_j") == []


# -- the ingest writes them; the KB's other readers never see them -------------------------------------


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("policy.md", f"# Refunds\n\n{REFUNDS}\n\n# Shipping\n\n{SHIPPING}\n".encode()),
        ("policy.docx", make_docx([("Refunds", REFUNDS), ("Shipping", SHIPPING)])),
        ("policy.pdf", make_pdf([REFUNDS, SHIPPING])),
    ],
)
def test_an_ingested_file_has_its_versions_fingerprints(service, name, data):
    kb_id, file_id = ingested(service, name, data)

    assert versions(service, kb_id) == [(file_id, 1)]
    assert named(service, kb_id, SHIPPING) == ((file_id, 1),)
    # The item keeps the file's MemOS id: a hit that gives it is named without another read.
    [file] = repository(service).query_kb_items(kb_id)[1]
    assert [p.memos_file_id for p in prints_of(service).query_prints(kb_id)] == [file.memos_file_id]
    # The listing and the KB's items are as they were: the fingerprints are never read for them.
    listing = service.call("GET", f"/knowledge-bases/{kb_id}/files", "alice")
    assert [entry["id"] for entry in listing.body["files"]] == [file_id]
    folders, files, uploads = repository(service).query_kb_items(kb_id)
    assert (len(folders), [f.file_id for f in files], len(uploads)) == (0, [file_id], 1)


# -- a replace, and the reconciler after MemOS switched ---------------------------------------------------


def test_a_replace_adds_the_next_versions_fingerprints_and_the_reconciler_drops_the_old_once_memos_switched(service):
    kb_id, file_id = ingested(service, "报价单.md", f"# 报价单\n\n{REFUNDS}\n".encode())
    wait_until(lambda: status(service, kb_id) == "available", timeout=20, message="version 1 to be processed")
    service.memos.pause_processing()
    v2 = f"# 报价单\n\n{PRICES}\n".encode()
    reply = service.call(
        "POST", f"/knowledge-bases/{kb_id}/files/{file_id}/replacements", "alice",
        body={"size_bytes": len(v2), "sha256": hashlib.sha256(v2).hexdigest()},
    )
    assert reply.status == HTTPStatus.CREATED, reply.body
    post_file(reply.body, v2)
    drain_ingest(service)

    assert versions(service, kb_id) == [(file_id, 1), (file_id, 2)]
    assert named(service, kb_id, PRICES) == ((file_id, 2),)
    # The next version keeps the same MemOS id: MemOS replaces a file in place.
    [file] = repository(service).query_kb_items(kb_id)[1]
    assert {p.version: p.memos_file_id for p in prints_of(service).query_prints(kb_id)} == {
        1: file.memos_file_id, 2: file.memos_file_id,
    }  # fmt: skip
    # MemOS still answers from version 1: the reconciler keeps its fingerprints
    service.invoke("ReconcileFunction", {"source": "aws.scheduler"})
    assert versions(service, kb_id) == [(file_id, 1), (file_id, 2)]

    service.memos.pause_processing(False)
    wait_until(lambda: status(service, kb_id) == "available", timeout=20, message="version 2 to be processed")
    counts = service.invoke("ReconcileFunction", {"source": "aws.scheduler"})

    assert counts["PrintsRemoved"] == 1
    assert versions(service, kb_id) == [(file_id, 2)]


# -- deletes and leftovers ------------------------------------------------------------------------------


def _cleaned(service: Service, reply) -> None:  # type: ignore[no-untyped-def]
    assert reply.status == HTTPStatus.ACCEPTED, reply.body
    cleanup_id = reply.body["cleanup_id"]
    assert any(service.invoke("CleanupFunction", {"cleanup_id": cleanup_id})["done"] for _ in range(10))


def test_a_deleted_files_fingerprints_go_with_its_cleanup(service):
    kb_id, file_id = ingested(service, "a.md", f"{REFUNDS}\n".encode())

    _cleaned(service, service.call("DELETE", f"/knowledge-bases/{kb_id}/files/{file_id}", "alice"))

    assert versions(service, kb_id) == []


def test_a_deleted_kbs_fingerprints_go_with_its_partition(service):
    kb_id, _ = ingested(service, "a.md", f"{REFUNDS}\n".encode())

    _cleaned(service, service.call("DELETE", f"/knowledge-bases/{kb_id}", "alice"))

    assert versions(service, kb_id) == []


def test_the_reconciler_removes_fingerprints_whose_file_is_gone(service):
    kb_id, file_id = ingested(service, "a.md", f"{REFUNDS}\n".encode())
    stray = Fingerprints(0, array("I", [1, 2, 3]))
    prints_of(service).put_prints(FilePrints(kb_id, "fi_gone", 1, stray))

    counts = service.invoke("ReconcileFunction", {"source": "aws.scheduler"})

    assert counts["PrintsRemoved"] == 1
    assert versions(service, kb_id) == [(file_id, 1)]

"""``DynamoRecallFiles`` on moto: a KB's ``PRINT#`` items decoded (of this KB only, an item of another format
skipped), its folders, and the named files' items in one read (a missing one absent)."""

from __future__ import annotations

from memmy_kb.adapters.dynamodb.keys import file_key, folder_key
from memmy_kb.adapters.dynamodb.recall_files import DynamoRecallFiles
from memmy_kb.adapters.dynamodb.table import dump
from memmy_kb.domain.fingerprints.prints import fingerprint
from tests.support.factories import file_record, folder_record
from tests.support.seed import put_item

TEXT = "Refunds are paid to the original card within five working days of the return being scanned."


def put_prints(service, kb_id: str, file_id: str, version: int, prints: bytes) -> None:
    put_item(
        service,
        {
            "PK": f"KB#{kb_id}",
            "SK": f"PRINT#{file_id}#{version:06d}",
            "type": "print",
            "kb_id": kb_id,
            "file_id": file_id,
            "version": version,
            "prints": prints,
        },
    )


def test_a_kbs_prints_folders_and_files_are_read_as_recall_needs_them(service):
    table = service.stores.table
    files = DynamoRecallFiles(table)
    expected = fingerprint([TEXT])
    put_prints(service, "kb_1", "fi_1", 1, expected.encode())
    put_prints(service, "kb_1", "fi_1", 2, expected.encode())
    put_prints(service, "kb_1", "fi_2", 1, b"not a fingerprint record")
    put_prints(service, "kb_2", "fi_9", 1, expected.encode())
    folder = folder_record("fo_1", kb_id="kb_1", name="policies")
    put_item(service, {**folder_key("kb_1", "fo_1"), "type": "folder", **folder.model_dump()})
    record = file_record("fi_1", kb_id="kb_1", name="refunds.md", folder_id="fo_1")
    table.client.put_item(TableName=table.name, Item=dump({**file_key("kb_1", "fi_1"), "type": "file", **record.model_dump()}))

    prints = files.query_prints("kb_1")

    assert sorted((p.kb_id, p.file_id, p.version) for p in prints) == [("kb_1", "fi_1", 1), ("kb_1", "fi_1", 2)]
    assert all(p.prints == expected for p in prints)
    assert [f.name for f in files.query_folders("kb_1")] == ["policies"]
    found = files.batch_get_files([("kb_1", "fi_1"), ("kb_1", "fi_gone")])
    assert list(found) == [("kb_1", "fi_1")]
    assert (found[("kb_1", "fi_1")].name, found[("kb_1", "fi_1")].folder_id) == ("refunds.md", "fo_1")

"""``FingerprintStore``'s contract: the fake and ``DynamoFingerprintStore`` (DynamoDB on moto) answer alike."""

from __future__ import annotations

import inspect
from array import array

import pytest

from memmy_kb.adapters.dynamodb.fingerprints import DynamoFingerprintStore
from memmy_kb.domain.fingerprints.prints import Fingerprints
from memmy_kb.domain.fingerprints.store import FilePrints, FingerprintStore
from tests.support.fakes import FakeFingerprintStore

PRINTS = Fingerprints(3, array("I", [5, 70, 900_000]))


@pytest.fixture(params=["fake", "dynamodb"])
def prints(request: pytest.FixtureRequest) -> FingerprintStore:
    if request.param == "fake":
        return FakeFingerprintStore()
    return DynamoFingerprintStore(request.getfixturevalue("service").stores.table)


def test_the_fake_has_the_ports_methods():
    for name, member in vars(FingerprintStore).items():
        if inspect.isfunction(member) and not name.startswith("_"):
            ours = [p for p in inspect.signature(getattr(FakeFingerprintStore, name)).parameters if p != "self"]
            assert ours == [p for p in inspect.signature(member).parameters if p != "self"], name


def test_a_kbs_fingerprints_are_stored_queried_and_deleted(prints: FingerprintStore):
    for file_id, version in (("fi_a", 1), ("fi_a", 2), ("fi_b", 1)):
        prints.put_prints(FilePrints("kb_p", file_id, version, PRINTS))
    prints.put_prints(FilePrints("kb_other", "fi_a", 1, PRINTS))

    found = prints.query_prints("kb_p")
    assert sorted((p.file_id, p.version) for p in found) == [("fi_a", 1), ("fi_a", 2), ("fi_b", 1)]
    assert all(p.prints == PRINTS and p.kb_id == "kb_p" for p in found)
    prints.delete_prints("kb_p", "fi_a", [1])
    assert sorted(prints.query_print_versions("kb_p")) == [("fi_a", 2), ("fi_b", 1)]
    prints.delete_prints("kb_p", "fi_b")
    assert prints.query_print_versions("kb_p") == [("fi_a", 2)]
    assert prints.query_print_versions("kb_other") == [("fi_a", 1)]


def test_the_files_memos_id_is_kept_and_an_item_without_it_reads_as_none(prints: FingerprintStore):
    prints.put_prints(FilePrints("kb_m", "fi_a", 1, PRINTS, "memos-file-7"))
    prints.put_prints(FilePrints("kb_m", "fi_b", 1, PRINTS))

    found = {p.file_id: p for p in prints.query_prints("kb_m")}
    assert (found["fi_a"].memos_file_id, found["fi_b"].memos_file_id) == ("memos-file-7", None)
    assert found["fi_a"] == FilePrints("kb_m", "fi_a", 1, PRINTS, "memos-file-7")


def test_a_put_overwrites_the_versions_fingerprints(prints: FingerprintStore):
    prints.put_prints(FilePrints("kb_p", "fi_a", 1, PRINTS))
    newer = Fingerprints(4, array("I", [8]))
    prints.put_prints(FilePrints("kb_p", "fi_a", 1, newer))

    [found] = prints.query_prints("kb_p")
    assert found.prints == newer


def test_a_files_versions_come_in_order_and_deleting_what_is_not_there_is_no_error(prints: FingerprintStore):
    for version in (10, 9, 2):
        prints.put_prints(FilePrints("kb_s", "fi_1", version, PRINTS))
    prints.delete_prints("kb_s", "fi_1", [3, 4])
    prints.delete_prints("kb_s", "fi_none")

    assert prints.query_print_versions("kb_s") == [("fi_1", 2), ("fi_1", 9), ("fi_1", 10)]
    assert prints.query_prints("kb_empty") == []

"""The capacity of one KB as the domain applies it, on the fakes: refused when an upload
is issued, held again when the ingest records the file, and the counts moved exactly once."""

from __future__ import annotations

from collections.abc import Iterator
from http import HTTPStatus

import pytest

from memmy_kb.domain.knowledge_bases.capacity import bytes_refused, files_refused
from memmy_kb.domain.storage import ObjectInfo, PresignedPost
from memmy_kb.domain.uploads import ingest, issuing
from memmy_kb.records import KbCapacity, KnowledgeBaseRecord
from tests.support.domain import refused
from tests.support.factories import T0, kb_record, owner_grant_for
from tests.support.fakes import FakeKnowledgeEngine, FakeStores

ROOM = KbCapacity(max_files=2, max_bytes=2048)
TEXT = b"plain notes\n"


class Bucket:
    """The few ``UploadObjects`` calls issuing and ingesting a small file make."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    def presign_post(self, key: str, *, size_bytes: int, content_type: str, expires_in: int) -> PresignedPost:
        return PresignedPost(url="https://bucket", fields={"key": key})

    def delete(self, key: str) -> None:
        self.deleted.append(key)

    def read_range(self, info: ObjectInfo, start: int, length: int) -> bytes:
        return TEXT[start : start + length]

    def iter_chunks(self, info: ObjectInfo, chunk_size: int = 1) -> Iterator[bytes]:
        yield TEXT


def seed_kb(stores: FakeStores, *, files: int = 0, used: int = 0, memos_kb_id: str = "mkb_1") -> KnowledgeBaseRecord:
    kb = kb_record("kb_1", memos_kb_id=memos_kb_id).model_copy(update={"file_count": files, "bytes_used": used})
    stores.table.seed(kb, owner_grant_for(kb))
    return kb


def issue(stores: FakeStores, size: int, upload_id: str = "up_1") -> issuing.IssuedUpload:
    return issuing.request_upload(
        stores.kbs,
        stores.contents,
        Bucket(),  # type: ignore[arg-type]
        user_id="alice",
        kb_id="kb_1",
        filename="notes.txt",
        size_bytes=size,
        content_type=None,
        folder_id=None,
        post_ttl_seconds=600,
        capacity=ROOM,
        clock=lambda: T0,
        new_id=lambda: upload_id,
    )


def counts(stores: FakeStores) -> tuple[int, int]:
    kb = stores.kbs.get_kb("kb_1")
    assert kb is not None
    return kb.file_count, kb.bytes_used


@pytest.mark.parametrize(
    ("files", "used", "size", "answer"),
    [
        (2, 0, 1, (HTTPStatus.CONFLICT, "kb_file_limit_reached")),
        (1, 2000, 49, (HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "kb_storage_limit_reached")),
    ],
    ids=["files", "bytes"],
)
def test_given_a_full_kb_when_an_upload_is_asked_for_then_it_is_refused_and_nothing_recorded(
    stores: FakeStores, files: int, used: int, size: int, answer: tuple[HTTPStatus, str]
) -> None:
    seed_kb(stores, files=files, used=used)

    assert refused(lambda: issue(stores, size)) == answer
    assert stores.contents.get_upload("kb_1", "up_1") is None


def test_given_room_for_exactly_the_file_when_asked_then_it_is_issued_with_the_memos_kb_id(
    stores: FakeStores,
) -> None:
    seed_kb(stores, files=1, used=2000)

    issued = issue(stores, 48)

    assert issued.upload.memos_kb_id == "mkb_1"  # the ingest reads no META for it


def test_the_refusals_name_the_limits() -> None:
    assert "at most 1000 files" in files_refused(KbCapacity()).message
    assert "at most 2 GiB" in bytes_refused(KbCapacity()).message
    assert "at most 100 bytes" in bytes_refused(KbCapacity(max_bytes=100)).message


def ingestion(stores: FakeStores, memos: FakeKnowledgeEngine, bucket: Bucket) -> ingest.Ingestion:
    upload = stores.contents.get_upload("kb_1", "up_1")
    assert upload is not None
    config = ingest.IngestConfig(
        inline_max_bytes=1024, get_url_ttl_seconds=60, capacity=ROOM, activity_retention_days=180
    )
    return ingest.Ingestion(
        stores.kbs, stores.contents, bucket, memos, upload, config, clock=lambda: T0  # type: ignore[arg-type]
    )


def test_given_room_when_a_file_is_ingested_then_it_is_counted_once_and_logged(
    stores: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    seed_kb(stores, memos_kb_id=memos.create_knowledgebase("memmy:kb_1"))
    issue(stores, len(TEXT))
    run = ingestion(stores, memos, Bucket())

    outcome = run.run(ObjectInfo(key="uploads/kb_1/up_1", size=len(TEXT), etag='"e"'), TEXT)

    assert outcome.result == "submitted"
    assert counts(stores) == (1, len(TEXT))
    assert [entry.kind for entry in stores.table.activity.values()] == ["uploaded"]
    # A second record of the same upload (a duplicated delivery) moves nothing
    assert run.record("mf-again").result == "ignored"
    assert counts(stores) == (1, len(TEXT))


def test_given_the_kb_filled_up_after_the_hold_when_recording_then_the_file_is_taken_back_and_rejected(
    stores: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    seed_kb(stores, files=1)
    issue(stores, len(TEXT))
    bucket = Bucket()
    run = ingestion(stores, memos, bucket)
    assert run.hold()
    kb = stores.kbs.get_kb("kb_1")
    assert kb is not None
    stores.table.seed(kb.model_copy(update={"file_count": 2}))  # another upload recorded meanwhile

    outcome = run.record("mf-1")

    assert (outcome.result, outcome.reason) == ("rejected", files_refused(ROOM).message)
    assert memos.calls["delete_knowledgebase_files"] == 1  # taken back (the fake counts only files it held)
    assert "uploads/kb_1/up_1" in bucket.deleted
    assert counts(stores) == (2, 0)
    assert stores.contents.query_kb_items("kb_1")[1] == []


def test_given_a_full_kb_when_holding_then_the_upload_is_rejected_before_memos_is_asked(
    stores: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    seed_kb(stores, files=1)
    issue(stores, len(TEXT))
    kb = stores.kbs.get_kb("kb_1")
    assert kb is not None
    stores.table.seed(kb.model_copy(update={"file_count": 2}))

    outcome = ingestion(stores, memos, Bucket()).run(
        ObjectInfo(key="uploads/kb_1/up_1", size=len(TEXT), etag='"e"'), TEXT
    )

    assert (outcome.result, outcome.reason) == ("rejected", files_refused(ROOM).message)
    assert memos.calls["add_knowledgebase_files"] == 0

"""Capacity: the KBs one user may own, the files and bytes one KB may hold, and MemOS's own
quota counted and alarmed."""

from __future__ import annotations

import json
from http import HTTPStatus

from memmy_kb import composition
from memmy_kb.adapters.dynamodb.contents import DynamoContentStore
from tests.support.factories import UNCAPPED
from tests.support.uploads import create_kb, drain_ingest, get_upload, post_file, request_upload, upload


def create(service, name="产品资料", user="alice"):
    return service.call("POST", "/knowledge-bases", user, body={"name": name})


def test_owning_the_most_kbs_allowed_is_409_with_the_limit_and_asks_memos_nothing(service, monkeypatch):
    monkeypatch.setenv("MAX_KBS_PER_USER", "2")
    composition.reset_composition()
    first = create(service, "一").body["id"]
    assert create(service, "二").status == HTTPStatus.CREATED
    created = len(service.memos.state()["knowledge_bases"])
    reply = create(service, "三")
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.CONFLICT, "kb_limit_reached")
    assert "at most 2" in reply.body["error"]["message"]
    assert len(service.memos.state()["knowledge_bases"]) == created
    # Another user has their own allowance; deleting one makes room again.
    assert create(service, "别人的", user="bob").status == HTTPStatus.CREATED
    assert service.call("DELETE", f"/knowledge-bases/{first}").status == HTTPStatus.ACCEPTED
    assert create(service, "三").status == HTTPStatus.CREATED
    assert create(service, "四").status == HTTPStatus.CONFLICT


def test_a_create_racing_past_the_read_is_refused_by_the_transaction_and_its_memos_kb_deleted(
    service, monkeypatch
):
    from memmy_kb.adapters.dynamodb.intents import DynamoCreateIntents

    monkeypatch.setenv("MAX_KBS_PER_USER", "1")
    composition.reset_composition()
    assert create(service, "一").status == HTTPStatus.CREATED
    # A concurrent create's intent transaction checked the count before this one's was recorded.
    intents = DynamoCreateIntents(service.stores.table)
    check_before = intents.put_create_intent
    monkeypatch.setattr(
        intents,
        "put_create_intent",
        lambda *args, **kwargs: check_before(*args, **{**kwargs, "max_owned": 1_000_000}),
    )
    service.override(composition.get_create_intents, lambda: intents)
    reply = create(service, "二")
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.CONFLICT, "kb_limit_reached")
    assert len([kb for kb in service.memos.state()["knowledge_bases"] if kb["linked"]]) == 1
    assert [k["name"] for k in service.call("GET", "/knowledge-bases").body["items"]] == ["一"]


def test_memos_quota_exhausted_stays_503_and_is_counted_in_a_metric(service, capsys):
    service.memos.add_fault("/create/knowledgebase", code=40304)
    reply = create(service)
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.SERVICE_UNAVAILABLE, "memos_quota_exhausted")
    documents = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert any(doc.get("MemosQuotaExhausted") == [1.0] or doc.get("MemosQuotaExhausted") == 1.0 for doc in documents), documents


def test_the_quota_metric_is_alarmed(service):
    alarms = [
        r["Properties"]
        for r in service.template["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Alarm" and r["Properties"].get("MetricName") == "MemosQuotaExhausted"
    ]
    assert len(alarms) == 1
    assert alarms[0]["Threshold"] == 0


# -- files and bytes per KB ------------------------------------------------------------------------


def caps(monkeypatch, *, files: int | None = None, size: int | None = None) -> None:
    if files is not None:
        monkeypatch.setenv("MAX_FILES_PER_KB", str(files))
    if size is not None:
        monkeypatch.setenv("MAX_BYTES_PER_KB", str(size))
    composition.reset_composition()


def counts(service, kb_id: str) -> tuple[int, int]:
    kb = service.stores.kbs.get_kb(kb_id)
    return kb.file_count, kb.bytes_used


def test_a_kb_holding_the_most_files_refuses_the_next_upload_with_409_and_the_limit(service, monkeypatch):
    caps(monkeypatch, files=2)
    kb_id = create_kb(service)
    first = upload(service, kb_id, "a.md", b"# one")
    upload(service, kb_id, "b.md", b"# two")
    drain_ingest(service)
    assert counts(service, kb_id) == (2, 10)

    reply = request_upload(service, kb_id, "c.md", 7)

    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.CONFLICT, "kb_file_limit_reached")
    assert "at most 2 files" in reply.body["error"]["message"]
    # Deleting a file makes room again
    file_id = next(f.file_id for f in service.stores.contents.query_kb_items(kb_id)[1] if f.upload_id == first)
    assert service.call("DELETE", f"/knowledge-bases/{kb_id}/files/{file_id}").status == HTTPStatus.ACCEPTED
    assert counts(service, kb_id) == (1, 5)
    assert request_upload(service, kb_id, "c.md", 7).status == HTTPStatus.CREATED


def test_a_file_that_does_not_fit_the_kbs_bytes_is_413_with_the_limit(service, monkeypatch):
    caps(monkeypatch, size=2048)
    kb_id = create_kb(service)
    upload(service, kb_id, "a.txt", b"x" * 1500)
    drain_ingest(service)

    reply = request_upload(service, kb_id, "b.txt", 600)

    assert (reply.status, reply.body["error"]["code"]) == (
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
        "kb_storage_limit_reached",
    )
    assert "at most 2 KiB" in reply.body["error"]["message"]
    assert request_upload(service, kb_id, "b.txt", 548).status == HTTPStatus.CREATED  # exactly fills it


def test_uploads_issued_together_past_the_cap_are_refused_at_ingest_and_taken_back_from_memos(
    service, monkeypatch
):
    # Given two uploads issued while the KB had room for one, both sent, the second ingested after it filled
    caps(monkeypatch, files=1)
    kb_id = create_kb(service)
    first = upload(service, kb_id, "a.md", b"# one")
    second = upload(service, kb_id, "b.md", b"# two")
    real_hold = DynamoContentStore.update_upload_submitting

    def hold_racing_past_the_check(self, *args, **kwargs):
        # the hold's check saw room (the first file not yet recorded); the record transaction decides
        return real_hold(self, *args, **{**kwargs, "capacity": UNCAPPED})

    monkeypatch.setattr(DynamoContentStore, "update_upload_submitting", hold_racing_past_the_check)

    drain_ingest(service)

    # Then exactly one file is recorded, the other upload ends rejected with the limit as its reason,
    # MemOS holds only the recorded file, and the counts say one file
    states = {u: get_upload(service, kb_id, u) for u in (first, second)}
    recorded = [u for u, s in states.items() if s.state == "submitted"]
    (rejected,) = [s for s in states.values() if s.state == "rejected"]
    assert len(recorded) == 1
    assert "at most 1 files" in rejected.reason
    files = service.stores.contents.query_kb_items(kb_id)[1]
    assert [f.upload_id for f in files] == recorded
    assert [f["id"] for kb in service.memos.state()["knowledge_bases"] for f in kb["files"]] == [
        files[0].memos_file_id
    ]
    assert counts(service, kb_id) == (1, 5)
    listed = service.call("GET", f"/knowledge-bases/{kb_id}/files").body["files"]
    assert {(f["status"], f.get("reason")) for f in listed if f["status"] == "failed"} == {
        ("failed", rejected.reason)
    }


def test_a_full_kb_refuses_at_the_hold_before_memos_is_asked(service, monkeypatch):
    # Given an upload issued before the KB filled up
    caps(monkeypatch, files=1)
    kb_id = create_kb(service)
    late = request_upload(service, kb_id, "late.md", 7).body
    upload(service, kb_id, "a.md", b"# one")
    drain_ingest(service)
    adds = service.memos.calls("/add/knowledgebase-file")

    assert post_file(late, b"# hello").status_code == 204
    drain_ingest(service)

    stored = get_upload(service, kb_id, late["upload_id"])
    assert (stored.state, "at most 1 files" in (stored.reason or "")) == ("rejected", True)
    assert service.memos.calls("/add/knowledgebase-file") == adds
    assert counts(service, kb_id) == (1, 5)


def test_deleting_a_folder_takes_its_files_off_the_counts(service, monkeypatch):
    kb_id = create_kb(service)
    folder_id = service.call("POST", f"/knowledge-bases/{kb_id}/folders", body={"name": "f"}).body["id"]
    ticket = request_upload(service, kb_id, "a.md", 5, folder_id=folder_id).body
    assert post_file(ticket, b"# one").status_code == 204
    upload(service, kb_id, "b.md", b"# two!")
    drain_ingest(service)
    assert counts(service, kb_id) == (2, 11)

    assert service.call("DELETE", f"/knowledge-bases/{kb_id}/folders/{folder_id}").status == HTTPStatus.ACCEPTED

    assert counts(service, kb_id) == (1, 6)


def test_a_backend_memos_finds_full_is_passed_over_the_create_lands_on_the_next_and_the_refusal_is_counted(
    service, capsys
):
    # Its max_kbs says there is room (a project that held KBs before backends existed), MemOS says no:
    # the create goes on to the other backend instead of answering 503, and the alarm still hears of it.
    from collections import Counter

    from tests.support.aws import TWO_BACKENDS, memos_backends

    with memos_backends(service, {"p1": 5, "p2": 5}):
        service.memos.add_fault("/create/knowledgebase", code=40304, times=1)
        capsys.readouterr()
        reply = create(service)
        assert reply.status == HTTPStatus.CREATED, reply.body
        linked = Counter(kb["project"] for kb in service.memos.state()["knowledge_bases"] if kb["linked"])
        assert linked == {TWO_BACKENDS["p2"]: 1}
        documents = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
        assert any(doc.get("MemosQuotaExhausted") in ([1.0], 1.0) for doc in documents), documents

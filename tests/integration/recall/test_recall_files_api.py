"""POST /recall naming each excerpt's file, through the real handlers on moto and the MemOS emulator.

Files go in by the real upload (presigned POST, queue, IngestFunction, MemOS); their fingerprints are put
as ``PRINT#<file_id>#<version:06d>`` items beside their ``FILE#`` (``prints``: ``Fingerprints.encode()``),
the layout the ingest records them in. Then the default plan (``by_file``, one search per backend) must
name the file an excerpt comes from, and count its searches.
"""

from __future__ import annotations

import hashlib
import os
from http import HTTPStatus
from typing import Any

import boto3

from memmy_kb.adapters.dynamodb.table import dump
from memmy_kb.composition import reset_composition
from memmy_kb.domain.fingerprints.prints import fingerprint
from tests.support.aws import Service
from tests.support.polling import wait_until
from tests.support.uploads import REGION, create_kb, drain_ingest, post_file, repository, request_upload

SEARCH = "/search/memory"
README_A = (
    "# Widget\n\nWidget renders charts in the terminal.\n\n## Further Information\n\n"
    "Send questions about the chart renderer to the widget mailing list, and read the changelog before "
    "upgrading because the colour palette moved to a separate package in version two.\n"
)
README_B = (
    "# Gadget\n\nGadget syncs calendars between devices.\n\n## Further Information\n\n"
    "Calendar conflicts are resolved by the most recent edit; the sync daemon logs every merge to a local "
    "journal that support engineers can replay when a meeting disappears.\n"
)
README_A2 = (
    "# Widget\n\nWidget renders charts in the terminal.\n\n## Further Information\n\n"
    "The colour palette now ships inside the widget package again; questions go to the forum, where the "
    "maintainers answer within a week and the old mailing list is archived.\n"
)


def record_prints(kb_id: str, file_id: str, version: int, text: str, memos_file_id: str | None = None) -> None:
    """The file version's fingerprints of ``text``, as the ingest records them (without the file's MemOS id
    unless given, as an item written before it was kept)."""
    item: dict[str, Any] = {
        "PK": f"KB#{kb_id}",
        "SK": f"PRINT#{file_id}#{version:06d}",
        "type": "print",
        "kb_id": kb_id,
        "file_id": file_id,
        "version": version,
        "prints": fingerprint(text.splitlines(keepends=True)).encode(),
    }
    if memos_file_id is not None:
        item["memos_file_id"] = memos_file_id
    boto3.client("dynamodb", region_name=REGION).put_item(TableName=os.environ["TABLE_NAME"], Item=dump(item))


def add_file(service: Service, kb_id: str, name: str, text: str, folder_id: str | None = None) -> str:
    """Upload ``text`` as ``name`` (into ``folder_id``), ingest it, record its prints; its file id."""
    extra = {} if folder_id is None else {"folder_id": folder_id}
    ticket = request_upload(service, kb_id, name, len(text.encode()), **extra)
    assert ticket.status == HTTPStatus.CREATED, ticket.body
    assert post_file(ticket.body, text.encode(), name).status_code == HTTPStatus.NO_CONTENT
    drain_ingest(service)
    (file,) = [f for f in repository(service).query_kb_items(kb_id)[1] if f.upload_id == ticket.body["upload_id"]]
    record_prints(kb_id, file.file_id, 1, text)
    return file.file_id


def processed(service: Service, kb_id: str) -> None:
    def ready() -> bool:
        files = service.call("GET", f"/knowledge-bases/{kb_id}/files", "alice").body["files"]
        return all(f["status"] == "available" for f in files)

    wait_until(ready, timeout=20, interval=0.05, message="the files to be processed")


def recall(service: Service, query: str) -> dict[str, Any]:
    reply = service.call("POST", "/recall", "alice", body={"query": query})
    assert reply.status == HTTPStatus.OK, reply.body
    body: dict[str, Any] = reply.body
    return body


def item_with(body: dict[str, Any], word: str) -> dict[str, Any]:
    (item,) = [i for i in body["items"] if word in i["content"]]
    return item


def test_two_files_sharing_a_heading_each_excerpt_names_its_own_file(service):
    kb_id = create_kb(service)
    folder = service.call("POST", f"/knowledge-bases/{kb_id}/folders", "alice", body={"name": "widget"})
    assert folder.status == HTTPStatus.CREATED, folder.body
    file_a = add_file(service, kb_id, "README.md", README_A, folder.body["id"])
    file_b = add_file(service, kb_id, "README.md", README_B)
    processed(service, kb_id)

    body = recall(service, "colour palette changelog calendar journal")

    a, b = item_with(body, "palette"), item_with(body, "journal")
    assert a["file"] == {
        "id": file_a, "name": "README.md", "folder_path": "widget", "version": 1, "knowledge_base_id": kb_id,
    }  # fmt: skip
    assert b["file"] == {"id": file_b, "name": "README.md", "folder_path": "", "version": 1, "knowledge_base_id": kb_id}
    assert a["files"] == b["files"] == []
    assert "（文件夹 folder: widget）" in body["context"]
    assert "《README.md》 § " in body["context"]


def test_a_replaced_file_is_named_by_the_same_id_at_its_new_version_with_the_new_text(service):
    kb_id = create_kb(service)
    file_id = add_file(service, kb_id, "README.md", README_A)
    processed(service, kb_id)
    assert item_with(recall(service, "colour palette"), "palette")["file"]["version"] == 1

    data = README_A2.encode()
    reply = service.call(
        "POST",
        f"/knowledge-bases/{kb_id}/files/{file_id}/replacements",
        "alice",
        body={"size_bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), "if_version": 1},
    )
    assert reply.status == HTTPStatus.CREATED, reply.body
    assert post_file(reply.body, data).status_code == HTTPStatus.NO_CONTENT
    drain_ingest(service)
    record_prints(kb_id, file_id, 2, README_A2)
    processed(service, kb_id)

    item = item_with(recall(service, "colour palette forum"), "palette")
    assert (item["file"]["id"], item["file"]["version"]) == (file_id, 2)
    assert "forum" in item["content"]
    assert "mailing list, and read the changelog" not in item["content"]


def test_a_recall_over_eight_kbs_on_one_backend_sends_one_search_and_the_per_kb_plan_four(service, monkeypatch):
    kbs = [create_kb(service, name=f"资料 {n}") for n in range(8)]
    for n, kb_id in enumerate(kbs):
        add_file(service, kb_id, f"notes-{n}.md", f"# Notes {n}\n\nThe colour palette of project {n} is blue.\n")
    for kb_id in kbs:
        processed(service, kb_id)

    before = service.memos.calls(SEARCH)
    body = recall(service, "colour palette")
    by_file = service.memos.calls(SEARCH) - before
    assert {i["file"]["knowledge_base_id"] for i in body["items"]} == set(kbs)  # every KB's excerpt names its file

    monkeypatch.setenv("RECALL_ATTRIBUTION", "per_kb")
    reset_composition()
    before = service.memos.calls(SEARCH)
    recall(service, "colour palette")
    per_kb = service.memos.calls(SEARCH) - before

    assert (by_file, per_kb) == (1, 4)


def test_a_hit_that_names_its_memos_file_is_named_by_it_before_its_text(service, monkeypatch):
    kb_id = create_kb(service)
    file_id = add_file(service, kb_id, "README.md", README_A)
    processed(service, kb_id)
    # The version's fingerprints recognise none of its text now; its item keeps the file's MemOS id.
    (file,) = repository(service).query_kb_items(kb_id)[1]
    record_prints(kb_id, file_id, 1, README_B, memos_file_id=file.memos_file_id)

    assert item_with(recall(service, "colour palette"), "palette")["file"] is None
    monkeypatch.setattr(service.memos.emulator.config, "hit_file_ids", True)  # hits give metadata.file_ids
    item = item_with(recall(service, "colour palette"), "palette")

    assert (item["file"]["id"], item["file"]["name"], item["file"]["version"]) == (file_id, "README.md", 1)

"""The state of the ``service`` fixture's three stores (the table, the bucket, MemOS) and what must hold of
them once reconcile has run (``assert_consistent``); ``settle`` plays the hours after the faults.

The S3 rule, from the code: the ingest keeps an upload's objects (``uploads/<kb>/<upload>`` and, for a
large file, ``verified/<kb>/<upload>``) after it is submitted, by design, until the bucket's lifecycle
expires them (three days). So an object may remain only while its KB is live and its upload is in flight
(pending or submitting) or submitted into a FILE item that is still live and still at that upload's
version. The objects of deleted KBs, of deleted files, of replaced versions, of rejected or expired
uploads, and keys without an upload record must be gone.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import boto3

from tests.support.aws import TWO_BACKENDS, Service
from tests.support.aws_runtime import Executions, Schedule, deliver, queue_depth
from tests.support.uploads import REGION

_OBJECT_KEY = re.compile(r"^(uploads|verified)/([^/]+)/([^/]+)$")


def table_items(service: Service) -> list[dict[str, Any]]:
    table = boto3.resource("dynamodb", region_name=REGION).Table(service.refs["Table"])
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"ConsistentRead": True}
    while True:
        page = table.scan(**kwargs)
        items.extend(page["Items"])
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def bucket_keys(service: Service) -> list[str]:
    client = boto3.client("s3", region_name=REGION)
    paginator = client.get_paginator("list_objects_v2")
    return [
        o["Key"]
        for page in paginator.paginate(Bucket=service.refs["UploadBucket"])
        for o in page.get("Contents", [])
    ]


def memos_kbs(service: Service) -> dict[str, list[dict[str, Any]]]:
    """MemOS KB id -> its files, as the emulator holds them."""
    return {kb["id"]: kb["files"] for kb in service.memos.state()["knowledge_bases"]}


def assert_consistent(service: Service) -> None:
    problems = consistency_problems(service)
    assert not problems, "inconsistent after reconcile:\n  " + "\n  ".join(problems)


def consistency_problems(service: Service) -> list[str]:
    """What must hold once reconcile has run: Memmy, MemOS and S3 agree, and nothing deleted is left.

    (a) every MemOS KB belongs to a live KB (a META item, by ``memos_kb_id``), and every live KB's MemOS
        KB exists; (b) every MemOS file of a live KB is referenced by exactly one FILE item; (c) every
        FILE item's MemOS file exists in its KB's MemOS KB, and its folder is live; (d) the S3 rule of the
        module docstring; (e) no item of a deleted KB (its partition, a grant), no outbox item, no upload
        still submitting (the reconciler resolves every one past its grace period); (f) each live KB's
        capacity counts on META (``file_count``, ``bytes_used``) are exactly its FILE items and their sizes;
        (g) every live KB's MemOS KB is in the project of the backend recorded on it, whose counter holds
        it, and each backend's count is exactly the KBs its counter holds (no slot lost or left behind);
        (h) no file is left marked ``replacing`` an upload no longer in flight (no file stays locked).
    """
    items = table_items(service)
    problems: list[str] = []
    metas = {i["PK"].removeprefix("KB#"): i for i in items if i["PK"].startswith("KB#") and i["SK"] == "META"}
    by_memos = {m["memos_kb_id"]: kb_id for kb_id, m in metas.items()}
    files = [i for i in items if i["PK"].startswith("KB#") and i["SK"].startswith("FILE#")]
    folders = {
        (i["kb_id"], i["folder_id"])
        for i in items
        if i["PK"].startswith("KB#") and i["SK"].startswith("FOLDER#")
    }
    uploads = {
        (i["kb_id"], i["upload_id"]): i
        for i in items
        if i["PK"].startswith("KB#") and i["SK"].startswith("UPLOAD#")
    }
    memos = memos_kbs(service)
    problems += backend_problems(service, metas, items)

    # (a)
    for memos_kb_id in memos:
        if memos_kb_id not in by_memos:
            problems.append(f"(a) MemOS KB {memos_kb_id} belongs to no live KB")
    for kb_id, meta in metas.items():
        if meta["memos_kb_id"] not in memos:
            problems.append(f"(a) live KB {kb_id} has no MemOS KB")
    # (b) and (c)
    for kb_id, meta in metas.items():
        in_memos = Counter(f["id"] for f in memos.get(meta["memos_kb_id"], []))
        referenced = Counter(f["memos_file_id"] for f in files if f["kb_id"] == kb_id)
        for memos_file_id in in_memos:
            if referenced[memos_file_id] != 1:
                problems.append(
                    f"(b) MemOS file {memos_file_id} of {kb_id} is referenced by {referenced[memos_file_id]} FILE items"
                )
        for memos_file_id in referenced:
            if memos_file_id not in in_memos:
                problems.append(
                    f"(c) FILE item of {kb_id} points at MemOS file {memos_file_id}, which MemOS lacks"
                )
    for f in files:
        if f.get("folder_id") and (f["kb_id"], f["folder_id"]) not in folders:
            problems.append(f"(c) FILE {f['file_id']} hangs under the deleted folder {f['folder_id']}")
    # (d)
    live_uploads = {(f["kb_id"], f["upload_id"]) for f in files}
    for key in bucket_keys(service):
        match = _OBJECT_KEY.match(key)
        if match is None:
            problems.append(f"(d) object {key} is not an upload's")
            continue
        kb_id, upload_id = match.group(2), match.group(3)
        upload = uploads.get((kb_id, upload_id))
        state = upload["state"] if upload else None
        in_flight = state in ("pending", "submitting")
        recorded = state == "submitted" and (kb_id, upload_id) in live_uploads
        if kb_id not in metas:
            problems.append(f"(d) object {key} belongs to a deleted KB")
        elif not (in_flight or recorded):
            why = (
                "no upload record"
                if upload is None
                else f"upload {state}" + (", its file deleted or at a later version" if state == "submitted" else "")
            )
            problems.append(f"(d) object {key} is left behind ({why})")
    # (e)
    for item in items:
        pk, sk = item["PK"], item["SK"]
        if pk.startswith("KB#") and pk.removeprefix("KB#") not in metas:
            problems.append(f"(e) item {pk} {sk} of a deleted KB")
        if pk.startswith("USER#") and sk.startswith("KB#") and sk.removeprefix("KB#") not in metas:
            problems.append(f"(e) grant {pk} {sk} of a deleted KB")
        if pk.startswith("CLEANUP#"):
            problems.append(f"(e) outbox item {pk} {sk} remains ({item.get('state', 'part')})")
    for (kb_id, upload_id), upload in uploads.items():
        if upload["state"] == "submitting":
            problems.append(f"(e) upload {upload_id} of {kb_id} still submitting")
    # (h)
    for f in files:
        holder = uploads.get((f["kb_id"], f["replacing"])) if f.get("replacing") else None
        if f.get("replacing") and (holder is None or holder["state"] not in ("pending", "submitting")):
            problems.append(f"(h) FILE {f['file_id']} is left marked by replace {f['replacing']}, no longer in flight")
    # (f)
    for kb_id, meta in metas.items():
        mine = [f for f in files if f["kb_id"] == kb_id]
        counted = (int(meta.get("file_count", 0)), int(meta.get("bytes_used", 0)))
        actual = (len(mine), sum(int(f["size_bytes"]) for f in mine))
        if counted != actual:
            problems.append(f"(f) KB {kb_id} counts {counted} (files, bytes), holds {actual}")
    return problems


def backend_problems(service: Service, metas: dict[str, dict[str, Any]], items: list[dict[str, Any]]) -> list[str]:
    """(g) of ``consistency_problems``: the KBs agree with the backends they were placed on."""
    problems = []
    project_of = {kb["id"]: kb["project"] for kb in service.memos.state()["knowledge_bases"]}
    counters = {i["PK"].removeprefix("BACKEND#"): i for i in items if i["PK"].startswith("BACKEND#")}
    placed = {kb: backend for backend, c in counters.items() for kb in c.get("kbs", set())}
    for kb_id, meta in metas.items():
        backend: Any = meta.get("memos_backend")
        if project_of.get(meta["memos_kb_id"], TWO_BACKENDS.get(backend)) != TWO_BACKENDS.get(backend):
            problems.append(f"(g) KB {kb_id} on backend {backend} is in MemOS project {project_of[meta['memos_kb_id']]}")
        if placed.get(kb_id) != backend:
            problems.append(f"(g) KB {kb_id} on backend {backend} holds a slot on {placed.get(kb_id)}")
    for backend, counter in counters.items():
        held = set(counter.get("kbs", set()))
        if int(counter.get("used", 0)) != len(held):
            problems.append(f"(g) backend {backend} counts {counter.get('used')} KBs, holds {sorted(held)}")
        if held - set(metas):
            problems.append(f"(g) backend {backend} holds slots of deleted KBs {sorted(held - set(metas))}")
    return problems


def settle(service: Service, executions: Executions, schedule: Schedule) -> None:
    """No more faults or crashes; then what AWS does over the next hours: deliveries, scheduled
    reconciles, and the cleanup executions they start, until nothing is left to do (or a few hours have
    passed: what is left then is for ``assert_consistent`` to name)."""
    service.memos.clear_faults()
    for _ in range(4):
        deliver(service)
        schedule.reconcile()
        executions.run_started()
        deliver(service)
        outbox = [i for i in table_items(service) if i["PK"].startswith("CLEANUP#")]
        if not outbox and queue_depth(service) == 0:
            return

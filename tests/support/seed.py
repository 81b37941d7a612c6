"""Seeding state that later flows (the ingest) normally create: files in MemOS and their FILE items."""

from __future__ import annotations

import base64
import secrets
from datetime import UTC, datetime
from typing import Any

import httpx

from memmy_kb.adapters.dynamodb.keys import file_key
from memmy_kb.adapters.dynamodb.table import dump
from memmy_kb.records import FileRecord
from tests.support.aws import Service


def put_item(service: Service, item: dict[str, Any]) -> None:
    repo = service.stores
    repo.table.client.put_item(TableName=repo.table.name, Item=dump(item))


def add_file(
    service: Service, kb_id: str, owner: str, name: str, content: bytes, folder_id: str | None = None
) -> str:
    """A file as the ingest leaves it: added to the KB's MemOS KB (the emulator's API) plus a FILE item."""
    grant = service.stores.kbs.get_grant(owner, kb_id)
    assert grant is not None, f"{owner} holds no grant on {kb_id}"
    memos_kb = grant.memos_kb_id
    reply = httpx.post(
        f"{service.memos.base_url}/add/knowledgebase-file",
        headers={"Authorization": f"Token {service.memos.api_key}"},
        json={
            "knowledgebase_id": memos_kb,
            "file": [{"content": base64.b64encode(content).decode(), "name": name}],
        },
        timeout=30,
    ).json()
    file_id = "fi_" + secrets.token_hex(8)
    record = FileRecord(
        kb_id=kb_id,
        file_id=file_id,
        memos_file_id=reply["data"][0]["id"],
        name=name,
        folder_id=folder_id,
        size_bytes=len(content),
        upload_id="up_" + secrets.token_hex(8),
        uploaded_at=datetime.now(UTC),
    )
    put_item(service, {**file_key(kb_id, file_id), "type": "file", **record.model_dump()})
    return file_id

"""The flows the deletion tests drive through the ``service`` fixture (uploads, folders, deletes retried
as a client would after a crash, recall, what a team's member reads and what a deleted team leaves), on
two MemOS backends (``on_two_backends``, an autouse fixture for the module that imports it)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest

from memmy_kb.adapters.dynamodb.keys import limit_key
from memmy_kb.adapters.dynamodb.table import dump
from memmy_kb.adapters.dynamodb.team_items import teams_counter
from tests.support.aws import Service
from tests.support.consistency import memos_kbs, table_items
from tests.support.crashes import Killed
from tests.support.polling import wait_until
from tests.support.uploads import post_file, request_upload

ADD = "/add/knowledgebase-file"
UPDATE = "/update/knowledgebase-file"
DELETE_FILES = "/delete/knowledgebase-file"
DELETE_KB = "/delete/knowledgebase"


@pytest.fixture(autouse=True)
def on_two_backends(two_memos_backends: Any) -> None:
    """Every case here runs with two MemOS backends (the emulator's two projects): KBs spread over both,
    and ``assert_consistent`` checks each."""


def md(title: str, size: int = 0) -> bytes:
    """A small Markdown file, padded with text lines to at least ``size`` bytes."""
    text = f"# {title}\n{title} 的内容。\n"
    while len(text.encode()) < size:
        text += f"{title} 的另一行内容。\n"
    return text.encode()


def upload_bytes(service: Service, kb_id: str, filename: str, data: bytes, folder_id: str | None = None) -> str:
    extra = {"folder_id": folder_id} if folder_id else {}
    reply = request_upload(service, kb_id, filename, len(data), **extra)
    assert reply.status == HTTPStatus.CREATED, reply.body
    assert post_file(reply.body, data, filename).status_code == HTTPStatus.NO_CONTENT
    upload_id: str = reply.body["upload_id"]
    return upload_id


def processed(service: Service) -> None:
    """Wait until MemOS has processed every file and version it was given."""
    wait_until(
        lambda: all(f["status"] != "running" for files in memos_kbs(service).values() for f in files),
        timeout=30,
        message="MemOS to process every file",
    )


def recall_problems(service: Service, *, present: list[str], absent: list[str]) -> list[str]:
    """Which words of ``present`` the owner's recall does not find, and which of ``absent`` it does."""
    processed(service)
    problems = []
    for word, expected in [*((w, True) for w in present), *((w, False) for w in absent)]:
        reply = service.call("POST", "/recall", "alice", body={"query": word})
        found = reply.status == HTTPStatus.OK and any(word in e["content"] for e in reply.body["items"])
        if found != expected:
            problems.append(f"recall of {word!r} {'finds nothing' if expected else 'still finds it'}")
    return problems


def new_folder(service: Service, kb_id: str, name: str, parent_id: str | None = None) -> str:
    body = {"name": name, **({"parent_id": parent_id} if parent_id else {})}
    reply = service.call("POST", f"/knowledge-bases/{kb_id}/folders", "alice", body=body)
    assert reply.status == HTTPStatus.CREATED, reply.body
    folder_id: str = reply.body["id"]
    return folder_id


def delete(service: Service, path: str, ok: HTTPStatus = HTTPStatus.ACCEPTED) -> int:
    """DELETE ``path`` as the owner (``ok``: its answer, 204 for a team); a crashed request is retried
    once, as the client would."""
    try:
        reply = service.call("DELETE", path, "alice")
    except Killed:
        reply = service.call("DELETE", path, "alice")
        assert reply.status in (ok, HTTPStatus.NOT_FOUND), reply.body
        return reply.status
    assert reply.status == ok, reply.body
    return reply.status


def kb_ids_listed(service: Service) -> set[str]:
    return {k["id"] for k in service.call("GET", "/knowledge-bases", "alice").body["items"]}


def counter(service: Service, user: str) -> int:
    """``user``'s teams counter (``LIMIT#teams#<user>``), 0 when absent."""
    table = service.stores.table
    item = table.client.get_item(TableName=table.name, Key=dump(limit_key(teams_counter(user))), ConsistentRead=True)
    return int(item.get("Item", {}).get("n", {}).get("N", "0"))


def reads(service: Service, user: str) -> tuple[set[str], int]:
    """The KBs ``user`` lists, and how many their recall searches (its scope, read at the query)."""
    listed = service.call("GET", "/knowledge-bases", user)
    assert listed.status == HTTPStatus.OK, listed.body
    recall = service.call("POST", "/recall", user, body={"query": "内容"})
    assert recall.status == HTTPStatus.OK, recall.body
    return {k["id"] for k in listed.body["items"]}, recall.body["scope_size"]


def team_residue(service: Service, team_id: str) -> list[str]:
    """What of ``team_id`` is left in the table: its META, memberships and invitations, any KB's entry for
    it, and any outbox item still there."""
    left = []
    for item in table_items(service):
        if item["PK"] == f"TEAM#{team_id}" or item["SK"] == f"TEAM#{team_id}" or item.get("GSI1PK") == f"TEAM#{team_id}":
            left.append(f"{item['PK']}/{item['SK']}")
        if item["PK"].startswith("CLEANUP#"):
            left.append(f"outbox {item['PK']} ({item.get('target')}, {item.get('state')})")
        if team_id in item.get("teams", ()):
            left.append(f"{item['PK']} still lists the team")
    return left

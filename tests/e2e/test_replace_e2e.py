"""A shared file replaced in place on the running local stack, through the CLI: the reader's recall answers
with the old words until MemOS has processed the new version, then with the new words only, without the
reader doing anything; the file keeps its id at version 2; a stale ``--if-version`` is refused and the same
bytes are ``unchanged`` (docs/uploads.md, "Replacing a file")."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http import HTTPStatus
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.e2e_cli import cli, ok_json
from tests.support.polling import wait_until
from tests.support.stack import RunningStack

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local_stack("MemOS processing held in the emulator"),
]


def words(stack: RunningStack, token: str, word: str) -> bool:
    """Whether ``word`` is in the excerpts the reader's recall brings for it."""
    reply = httpx.post(
        f"{stack.api_url}/recall", json={"query": word}, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert reply.status_code == HTTPStatus.OK, reply.text
    return any(word in item["content"] for item in reply.json()["items"])


@contextmanager
def memos_processing_held(stack: RunningStack) -> Iterator[None]:
    """MemOS (the emulator) keeps every new file and version processing until the block ends."""
    httpx.post(f"{stack.memos_url}/_emulator/processing", json={"paused": True}, timeout=10).raise_for_status()
    try:
        yield
    finally:
        httpx.post(f"{stack.memos_url}/_emulator/processing", json={"paused": False}, timeout=10).raise_for_status()


def the_file(stack: RunningStack, token: str, kb: str) -> dict[str, Any]:
    [file] = ok_json(stack, token, "files", "ls", kb)["files"]
    return file  # type: ignore[no-any-return]


def test_a_shared_file_replaced_in_place_answers_the_reader_with_the_new_words_only_once_processed(
    local_stack: RunningStack, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    owner = local_stack.token(f"rep-owner-{suffix}", name="Owner")
    reader_id = f"rep-reader-{suffix}"
    reader = local_stack.token(reader_id, name="Reader")
    assert cli(local_stack, reader, "me").returncode == 0
    old, new, newer = f"penguin{suffix}", f"walrus{suffix}", f"badger{suffix}"

    # Given a price list uploaded at version 1 and shared: the reader's recall finds its words
    kb = ok_json(local_stack, owner, "kb", "create", "报价")["id"]
    v1 = tmp_path / "报价单.md"
    v1.write_text(f"# 报价单\n企业版 {old} 每年一万元。\n", encoding="utf-8")
    assert cli(local_stack, owner, "files", "upload", kb, str(v1), "--wait", "--timeout", "60").returncode == 0
    assert ok_json(local_stack, owner, "kb", "share", kb, reader_id)["user_id"] == reader_id
    first = the_file(local_stack, owner, kb)
    assert (first["version"], first["status"]) == (1, "available")
    assert words(local_stack, reader, old)

    # When the owner replaces it while MemOS holds the new version back
    v2 = tmp_path / "new-price.md"
    v2.write_text(f"# 报价单\n企业版 {new} 每年两万元。\n", encoding="utf-8")
    with memos_processing_held(local_stack):
        sent = cli(local_stack, owner, "files", "replace", kb, first["id"], str(v2), "--if-version", "1")
        assert sent.returncode == 0, sent.stderr
        assert sent.stdout.split()[:2] == ["sent", first["id"]]
        recorded = wait_until(
            lambda: (f := the_file(local_stack, owner, kb))["version"] == 2 and f,
            timeout=30,
            message="the replace to be recorded",
        )
        # Then version 2 is recorded and processing, and the reader still gets the old words, not the new
        assert (recorded["id"], recorded["status"], recorded["name"]) == (first["id"], "processing", "报价单.md")
        assert words(local_stack, reader, old)
        assert not words(local_stack, reader, new)

    # and once MemOS has processed it, only the new words, with no action from the reader
    wait_until(lambda: the_file(local_stack, owner, kb)["status"] == "available", timeout=30, message="version 2")
    assert words(local_stack, reader, new)
    assert not words(local_stack, reader, old)
    listed = ok_json(local_stack, owner, "files", "ls", kb)["files"]
    assert [(f["id"], f["version"], f["name"]) for f in listed] == [(first["id"], 2, "报价单.md")]
    assert "  v2  " in cli(local_stack, owner, "files", "ls", kb).stdout

    # A stale --if-version is refused, the same bytes are unchanged, and --wait waits for version 3
    stale = cli(local_stack, owner, "files", "replace", kb, first["id"], str(v1), "--if-version", "1")
    assert stale.returncode == 1
    assert "version_conflict" in stale.stderr
    same = cli(local_stack, owner, "files", "replace", kb, first["id"], str(v2))
    assert (same.returncode, same.stdout.split()[0]) == (0, "unchanged")
    v3 = tmp_path / "newer-price.md"
    v3.write_text(f"# 报价单\n企业版 {newer} 每年三万元。\n", encoding="utf-8")
    waited = cli(local_stack, owner, "files", "replace", kb, first["id"], str(v3), "--if-version", "2", "--wait")
    assert waited.returncode == 0, waited.stderr
    assert waited.stdout.split()[:4] == ["available", first["id"], "version", "3"]
    assert words(local_stack, reader, newer)
    assert not words(local_stack, reader, new)

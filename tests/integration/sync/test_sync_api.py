"""A folder sync against the real handlers (moto, the MemOS emulator): the SDK's HTTP calls are answered by
the ``service`` fixture, the bytes go to moto's bucket, the ingest is fed from the real queue. The files a
sync uploads carry ``origin: sync`` and their hash; a file uploaded by hand carries neither and is never
touched; edits, deletions and additions are exactly what one pass changes; a pass killed after the service
issued an upload resumes without a second one; two desktops linked to one KB converge; a version MemOS
failed is sent again once, then shown failed (docs/sync.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx
import pytest

from memmy_kb_client.sdk import ClientConfig, MemmyClient
from memmy_kb_client.storage_post import OpenFile
from memmy_kb_client.sync.run import PassResult, run_pass
from memmy_kb_client.sync.store import SyncStore
from tests.support.aws import Service
from tests.support.mock_http import mock_http
from tests.support.polling import wait_until
from tests.support.uploads import create_kb, drain_ingest, post_file, repository, upload


class Killed(BaseException):
    """The process stopping mid-pass."""


def sdk_for(service: Service, user: str = "alice") -> MemmyClient:
    """The SDK, its requests answered by the real handlers (as API Gateway would route them)."""
    calls: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        path = "/".join(unquote(part) for part in request.url.path.split("/"))
        query = dict(request.url.params) or None
        body = json.loads(request.content) if request.content else None
        headers = {k: v for k, v in request.headers.items() if k.lower() == "idempotency-key"}
        calls.append(f"{request.method} {request.url.path}")
        reply = service.call(request.method, path, user, body=body, headers=headers or None, query=query)
        return (
            httpx.Response(reply.status, json=reply.body)
            if reply.body is not None
            else httpx.Response(reply.status)
        )

    client = MemmyClient(
        ClientConfig("http://api", None),
        http=mock_http(answer, "http://api"),
    )
    client.calls = calls  # type: ignore[attr-defined]
    return client


def send(ticket: dict[str, Any], source: OpenFile) -> None:
    """Storage: the presigned POST to moto's bucket, of the open file the pass hands over."""
    response = post_file(ticket, source.read(), "file")
    assert response.status_code == 204, response.text


@pytest.fixture
def store() -> Iterator[SyncStore]:
    opened = SyncStore(":memory:")
    yield opened
    opened.close()


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def sync(
    client: MemmyClient, store: SyncStore, kb_id: str, root: Path, tmp_path: Path, **options: Any
) -> PassResult:
    options.setdefault("send", send)
    return run_pass(client, store, kb_id, root, lock_dir=tmp_path / "locks", **options)


def files_by_path(service: Service, kb_id: str) -> dict[str, Any]:
    folders, files, _ = repository(service).query_kb_items(kb_id)
    names = {f.folder_id: f.name for f in folders}
    return {(f"{names[f.folder_id]}/" if f.folder_id else "") + f.name: f for f in files}


def test_a_synced_folder_lands_with_its_origin_and_hashes_and_a_hand_upload_is_left_alone(
    service: Service, store: SyncStore, tmp_path: Path
) -> None:
    kb_id = create_kb(service)
    upload(service, kb_id, "by-hand.md", b"# uploaded from the page\n")
    root = tmp_path / "docs"
    for name in ("a.md", "b.md", "c.txt", "sub/d.md"):
        write(root, name, f"# {name}\n")
    write(root, "by-hand.md", "# the folder's own by-hand.md\n")
    client = sdk_for(service)

    first = sync(client, store, kb_id, root, tmp_path)
    drain_ingest(service)

    assert first.outcome is not None
    assert first.outcome.errors == []
    assert [s.path for s in first.plan.skips] == ["by-hand.md"]
    files = files_by_path(service, kb_id)
    assert sorted(files) == ["a.md", "b.md", "by-hand.md", "c.txt", "sub/d.md"]
    assert {p: f.origin for p, f in files.items()} == {**dict.fromkeys(files, "sync"), "by-hand.md": None}
    assert all(f.sha256 for f in files.values())
    listing = client.list_files(kb_id)
    assert {f["name"]: f.get("origin") for f in listing["files"]}["a.md"] == "sync"

    # A second pass with nothing changed: the KB read and one listing per folder, nothing else
    client.calls.clear()  # type: ignore[attr-defined]
    sync(client, store, kb_id, root, tmp_path)
    again = sync(client, store, kb_id, root, tmp_path)
    assert again.plan.changes == 0
    assert sorted(client.calls[-3:]) == sorted(  # type: ignore[attr-defined]
        [
            f"GET /knowledge-bases/{kb_id}",
            f"GET /knowledge-bases/{kb_id}/files",
            f"GET /knowledge-bases/{kb_id}/files",
        ]
    )


def test_edit_delete_and_add_are_exactly_what_one_pass_changes(
    service: Service, store: SyncStore, tmp_path: Path
) -> None:
    kb_id, root, client = create_kb(service), tmp_path / "docs", sdk_for(service)
    for name in ("a.md", "b.md", "c.md", "sub/d.md"):
        write(root, name, f"# {name}\n")
    sync(client, store, kb_id, root, tmp_path)
    drain_ingest(service)
    before = files_by_path(service, kb_id)

    write(root, "a.md", "# a.md, edited\n")
    (root / "b.md").unlink()
    write(root, "sub/e.md", "# e.md\n")
    result = sync(client, store, kb_id, root, tmp_path)
    drain_ingest(service)

    assert result.outcome is not None
    assert sorted((d["action"], d["path"]) for d in result.outcome.done) == [
        ("deleted", "b.md"),
        ("replaced", "a.md"),
        ("uploaded", "sub/e.md"),
    ]
    after = files_by_path(service, kb_id)
    assert sorted(after) == ["a.md", "c.md", "sub/d.md", "sub/e.md"]
    assert (after["a.md"].file_id, after["a.md"].version) == (before["a.md"].file_id, 2)


def test_a_pass_killed_after_the_upload_was_issued_resumes_without_a_second_upload(
    service: Service, store: SyncStore, tmp_path: Path
) -> None:
    kb_id, root, client = create_kb(service), tmp_path / "docs", sdk_for(service)
    write(root, "a.md", "# a\n")

    def killed(ticket: dict[str, Any], source: OpenFile) -> None:
        raise Killed

    with pytest.raises(Killed):
        sync(client, store, kb_id, root, tmp_path, send=killed)
    resumed = sync(client, store, kb_id, root, tmp_path)
    drain_ingest(service)
    sync(client, store, kb_id, root, tmp_path)

    assert [s.path for s in resumed.plan.resumes] == ["a.md"]
    _, files, uploads = repository(service).query_kb_items(kb_id)
    assert [f.name for f in files] == ["a.md"]
    assert len(uploads) == 1


def test_two_desktops_linked_to_one_kb_converge(service: Service, tmp_path: Path) -> None:
    kb_id = create_kb(service)
    one, two = SyncStore(":memory:"), SyncStore(":memory:")
    first, second = tmp_path / "desktop-1", tmp_path / "desktop-2"
    for root in (first, second):
        write(root, "shared.md", "# v1\n")
    client = sdk_for(service)

    # Desktop 1 syncs first; desktop 2 finds the same bytes there and adopts the file
    sync(client, one, kb_id, first, tmp_path)
    drain_ingest(service)
    adopted = sync(client, two, kb_id, second, tmp_path)
    assert (adopted.plan.changes, [s.kind for s in adopted.plan.records]) == (0, ["record"])

    # Both get the same edit; desktop 2 reads the KB, then desktop 1's replace lands, then desktop 2 replaces
    for root in (first, second):
        write(root, "shared.md", "# v2, the same edit on both\n")
    other = sdk_for(service)
    listed = other.list_files

    def listing_then_desktop_one(kb: str, folder_id: str | None = None) -> dict[str, Any]:
        answer = listed(kb, folder_id)
        sync(client, one, kb_id, first, tmp_path)
        drain_ingest(service)
        return answer

    other.list_files = listing_then_desktop_one  # type: ignore[method-assign]
    late = sync(other, two, kb_id, second, tmp_path)

    # Then desktop 2's replace meets version_conflict, reads the file again, finds its bytes there: done
    assert late.outcome is not None
    assert late.outcome.errors == []
    assert [(d["action"], d["version"]) for d in late.outcome.done] == [("unchanged", 2)]
    [file] = repository(service).query_kb_items(kb_id)[1]
    assert (file.name, file.version) == ("shared.md", 2)
    one.close()
    two.close()


def processed_by_memos(service: Service) -> None:
    def settled() -> bool:
        kbs = service.memos.state()["knowledge_bases"]
        return not any(f["status"] == "running" for k in kbs for f in k["files"])

    drain_ingest(service)
    wait_until(settled, timeout=10, interval=0.02, message="MemOS to finish processing")


def test_a_version_memos_failed_is_sent_again_once_then_shown_failed(
    service: Service, store: SyncStore, tmp_path: Path
) -> None:
    # Given a synced file whose edit MemOS fails (no text in it): version 2 failed, version 1 answers
    kb_id, root, client = create_kb(service), tmp_path / "docs", sdk_for(service)
    write(root, "a.md", "# a\n\nthe text that answers\n")
    sync(client, store, kb_id, root, tmp_path)
    processed_by_memos(service)
    write(root, "a.md", " \n\n \n")
    sync(client, store, kb_id, root, tmp_path)
    processed_by_memos(service)
    [listed] = client.list_files(kb_id)["files"]
    assert (listed["version"], listed["status"]) == (2, "failed")

    # When the next passes run, the bytes unchanged
    again = sync(client, store, kb_id, root, tmp_path)
    processed_by_memos(service)
    shown = sync(client, store, kb_id, root, tmp_path)

    # Then the first sends them again (the cloud takes the same bytes: a new version, not "unchanged"), and
    # with MemOS failing them again the next shows the file failed, with its reason, sending nothing
    assert again.outcome is not None
    assert [(d["action"], d["path"]) for d in again.outcome.done] == [("replaced", "a.md")]
    assert repository(service).query_kb_items(kb_id)[1][0].version == 3
    assert shown.plan.summary()["failed"] == [{"path": "a.md", "reason": listed["reason"]}]
    assert "previous version still answers" in listed["reason"]
    assert shown.plan.changes == 0

"""The linked folders' worker (``memmy_kb_client.sync.links``) without a watcher, against an in-memory KB:
an unlink stops the pass under way, a confirmation lets through only the deletions it was shown, and a
link that keeps failing is tried again less and less often. (The watcher's tests, with ``watchfiles``,
are tests/integration/test_sync_links.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.sync.links import Links
from memmy_kb_client.sync.store import SyncStore
from tests.support.fake_kb import FakeKb


@pytest.fixture
def store() -> Iterator[SyncStore]:
    opened = SyncStore(":memory:")
    yield opened
    opened.close()


def folder_of(root: Path, count: int) -> None:
    root.mkdir()
    for index in range(count):
        (root / f"{index}.md").write_text(f"file {index}", encoding="utf-8")


def test_unlinking_a_folder_stops_its_pass_under_way(tmp_path: Path, store: SyncStore) -> None:
    # Given a folder of five files being sent by a link's first pass
    kb, root = FakeKb(), tmp_path / "docs"
    folder_of(root, 5)

    def send_then_unlink(ticket: dict[str, Any], path: Path) -> None:
        kb.send(ticket, path)
        links.unlink(str(root))  # the user: "not that folder!"

    links = Links(store, tmp_path / "locks", lambda: kb, watch=False, send=send_then_unlink)
    links.link(str(root), kb.kb_id)

    # When it is unlinked as the first file goes (the worker's pass, run here on the test's thread)
    links._pass(str(root))

    # Then nothing more is sent
    assert kb.calls["request_upload"] == 1
    assert links.shown() == []

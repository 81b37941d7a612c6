"""Which folders a sync takes and what one folder is (``memmy_kb_client.sync.roots``): a folder reached by
two paths has one record, one lock and one link; ``/``, the home directory and a folder in or holding a
memmy-kb home are refused with a sentence; a pass that would send more than 5,000 files asks first."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memmy_kb_client.sync import roots
from memmy_kb_client.sync.execute import SyncAborted
from memmy_kb_client.sync.links import LinkError, Links
from memmy_kb_client.sync.pass_lock import pass_lock
from memmy_kb_client.sync.run import PassResult, run_pass
from memmy_kb_client.sync.store import Synced, SyncStore, pair_of
from tests.support.fake_kb import FakeKb


@pytest.fixture
def store() -> Iterator[SyncStore]:
    opened = SyncStore(":memory:")
    yield opened
    opened.close()


def write(root: Path, relative: str, text: str = "text") -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def sync(kb: FakeKb, store: SyncStore, root: Path, tmp_path: Path, **options: object) -> PassResult:
    return run_pass(kb, store, kb.kb_id, root, lock_dir=tmp_path / "locks", send=kb.send, **options)  # type: ignore[arg-type]


def docs_and_alias(tmp_path: Path) -> tuple[Path, Path]:
    real = tmp_path / "disk" / "docs"
    write(real, "a.md", "alpha")
    write(real, "sub/b.md", "beta")
    alias = tmp_path / "docs-link"
    alias.symlink_to(real, target_is_directory=True)
    return real, alias


# -- one folder, however it is reached ---------------------------------------------------------------


def test_a_folder_synced_by_two_paths_has_one_record_one_lock_and_its_files_once(
    tmp_path: Path, store: SyncStore
) -> None:
    real, alias = docs_and_alias(tmp_path)
    kb = FakeKb()

    sync(kb, store, alias, tmp_path)
    kb.ingest()
    again = sync(kb, store, real / ".." / "docs", tmp_path)

    assert pair_of(kb.kb_id, alias) == pair_of(kb.kb_id, real) == f"{kb.kb_id}\n{real}"
    assert sorted(kb.paths()) == ["a.md", "sub/b.md"]  # once each
    assert again.plan.uploads == []
    assert again.outcome is not None
    assert again.outcome.done == []
    assert sorted(store.memory(pair_of(kb.kb_id, real)).synced) == ["a.md", "sub/b.md"]
    assert len(list((tmp_path / "locks").glob("*.lock"))) == 1


def test_two_paths_of_one_folder_share_its_pass_lock_even_unresolved(tmp_path: Path) -> None:
    real, alias = docs_and_alias(tmp_path)

    with pass_lock(tmp_path / "locks", f"kb_1\n{alias}") as first:  # a path as given, not resolved
        with pass_lock(tmp_path / "locks", pair_of("kb_1", real), wait=False) as second:
            assert (first, second) == (True, False)
        with pass_lock(tmp_path / "locks", pair_of("kb_2", real), wait=False) as other_kb:
            assert other_kb is True


def test_records_kept_under_the_path_given_before_are_taken_over_not_uploaded_again(
    tmp_path: Path, store: SyncStore
) -> None:
    # Given what an earlier version kept under the alias's absolute path (before the real path was the key)
    real, alias = docs_and_alias(tmp_path)
    kb = FakeKb()
    sync(kb, store, real, tmp_path)
    kb.ingest()
    new_pair, old_pair = pair_of(kb.kb_id, real), f"{kb.kb_id}\n{alias}"
    for path, synced in store.memory(new_pair).synced.items():
        store.forget(new_pair, path)
        store.synced(old_pair, path, synced)

    # When the folder is synced again by either path
    result = sync(kb, store, alias, tmp_path)

    # Then its records are found and moved: nothing is sent again
    assert result.plan.uploads == []
    assert sorted(kb.paths()) == ["a.md", "sub/b.md"]
    assert store.memory(old_pair).synced == {}
    assert sorted(store.memory(new_pair).synced) == ["a.md", "sub/b.md"]
    assert isinstance(store.memory(new_pair).synced["a.md"], Synced)


def test_a_folder_linked_by_two_paths_is_one_link_and_its_alias_cannot_link_it_elsewhere(
    tmp_path: Path, store: SyncStore
) -> None:
    real, alias = docs_and_alias(tmp_path)
    kb = FakeKb()
    links = Links(store, tmp_path / "locks", lambda: kb, watch=False, send=kb.send)

    links.link(str(alias), kb.kb_id)
    links.link(str(real), kb.kb_id)

    assert store.links() == [(str(real), kb.kb_id)]
    assert [link["dir"] for link in links.shown()] == [str(real)]
    with pytest.raises(LinkError, match=f"{real} is linked to {kb.kb_id} already"):
        links.link(str(alias), "kb_other")
    assert links.unlink(str(alias)) is True
    assert store.links() == []
    assert links.shown() == []


# -- folders refused ---------------------------------------------------------------------------------


def test_the_whole_disk_and_the_home_directory_are_refused_with_a_sentence(
    tmp_path: Path, store: SyncStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    write(home, "notes.md")
    monkeypatch.setenv("HOME", str(home))
    kb = FakeKb()
    links = Links(store, tmp_path / "locks", lambda: kb, watch=False, send=kb.send)

    for folder, said in (("/", "is a whole disk"), ("~", "is your home directory itself"), (str(home), "home directory")):
        with pytest.raises(SyncAborted, match=said):
            sync(kb, store, Path(folder), tmp_path)
        with pytest.raises(LinkError, match=said):
            links.link(folder, kb.kb_id)
    assert dict(kb.calls) == {}
    assert store.links() == []
    assert roots.root_refused(roots.real_root(home / "docs")) is None  # a folder in it is fine


@pytest.mark.parametrize(
    "marker",
    ["x/.memmy-kb/desktop-private/cloud-login.json", "team/other-home/desktop/service.json", ".mk/desktop/hook-token"],
)
def test_a_folder_holding_another_memmy_kb_home_is_refused_naming_it(
    tmp_path: Path, store: SyncStore, marker: str
) -> None:
    root = tmp_path / "docs"
    write(root, "a.md")
    write(root, marker, "{}")
    home = root / marker.split("/desktop")[0]
    kb = FakeKb()

    with pytest.raises(SyncAborted, match=f"holds a memmy-kb home \\({home}\\)"):
        sync(kb, store, root, tmp_path)
    with pytest.raises(LinkError, match="holds a memmy-kb home"):
        Links(store, tmp_path / "locks", lambda: kb, watch=False, send=kb.send).link(str(root), kb.kb_id)
    # A folder in that home is refused too; one merely called desktop is no home.
    with pytest.raises(SyncAborted, match="is in a memmy-kb home"):
        sync(kb, store, home / marker.split("/")[-2], tmp_path)
    assert dict(kb.calls) == {}


def test_a_folder_named_desktop_without_a_homes_files_is_synced(tmp_path: Path, store: SyncStore) -> None:
    root = tmp_path / "docs"
    write(root, "work/desktop/plan.md")
    write(root, "work/desktop-private/diary.md")
    kb = FakeKb()

    sync(kb, store, root, tmp_path)

    kb.ingest()
    assert sorted(kb.paths()) == ["work/desktop-private/diary.md", "work/desktop/plan.md"]


# -- a large pass asks ---------------------------------------------------------------------------------


def test_a_pass_that_would_send_more_files_than_the_cap_stops_for_yes_with_its_totals(
    tmp_path: Path, store: SyncStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert roots.MAX_FILES_WITHOUT_YES == 5000
    monkeypatch.setattr(roots, "MAX_FILES_WITHOUT_YES", 2)
    root = tmp_path / "docs"
    for name in ("a.md", "b.md", "c.md"):
        write(root, name, "x" * 500_000)
    kb = FakeKb()

    stopped = sync(kb, store, root, tmp_path)
    dry = sync(kb, store, root, tmp_path, dry_run=True)

    assert stopped.stopped == stopped.confirm == dry.confirm
    assert stopped.stopped == (
        "it would send 3 files (1.5 MB), more than 2 at once: check that this is the folder you mean"
    )
    assert kb.paths() == {}
    assert stopped.outcome is None
    assert sync(kb, store, root, tmp_path, yes=True).outcome is not None
    kb.ingest()
    assert sorted(kb.paths()) == ["a.md", "b.md", "c.md"]

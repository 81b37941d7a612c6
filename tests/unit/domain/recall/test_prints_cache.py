"""The KBs' fingerprints kept per environment (``memmy_kb.domain.recall.prints_cache``), and recall's use of them:
read once while fresh, again when META's counts change or the TTL passes, bounded in memory, and a load
slower than the recall budget leaving that KB's excerpts without a file this time only."""

from __future__ import annotations

import threading
from array import array

from memmy_kb.domain.fingerprints.prints import FileIndex, Fingerprints
from memmy_kb.domain.recall.prints_cache import KbPrints, PrintsCache
from tests.support.fakes.recall_files import FakeRecallFiles
from tests.support.polling import wait_until
from tests.support.recall import Repository, engine, own, run

TEXT = (
    "Refunds are paid to the original card within five working days once the returned parcel has been "
    "scanned at the warehouse, and a receipt is sent to the address on the order."
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def entry(kb_id: str, hashes: int, *, stamp: tuple[int, int] = (1, 0), at: float = 100.0) -> KbPrints:
    prints = Fingerprints(0, array("I", range(hashes)))
    return KbPrints(kb_id, FileIndex({(kb_id, "f", 1): prints}), {}, stamp, at, hashes)


def test_an_entry_is_fresh_for_its_stamp_until_the_ttl():
    clock = Clock()
    cache = PrintsCache(ttl_seconds=60, clock=clock)
    cache.put(entry("kb1", 10))

    assert cache.fresh("kb1", (1, 0)) is not None
    assert cache.fresh("kb1", (2, 0)) is None  # a file added or deleted
    assert cache.fresh("kb1", (1, 7)) is None  # bytes changed: a replace
    clock.now += 60
    assert cache.fresh("kb1", (1, 0)) is None


def test_past_the_bound_the_least_recently_used_kbs_go_and_a_kb_over_it_alone_is_not_kept():
    cache = PrintsCache(max_hashes=100, clock=Clock())
    cache.put(entry("kb1", 40))
    cache.put(entry("kb2", 40))
    assert cache.fresh("kb1", (1, 0)) is not None  # kb1 used: kb2 is now the least recent
    cache.put(entry("kb3", 40))

    assert cache.fresh("kb2", (1, 0)) is None
    assert cache.fresh("kb1", (1, 0)) is not None
    assert cache.fresh("kb3", (1, 0)) is not None
    assert cache.hashes == 80

    cache.put(entry("kb4", 101))
    assert cache.fresh("kb4", (1, 0)) is None
    assert cache.hashes == 80

    cache.put(entry("kb1", 10))  # replacing an entry counts only the new one
    assert cache.hashes == 50
    assert len(cache) == 2


def _world() -> tuple[FakeRecallFiles, object]:
    files = FakeRecallFiles()
    files.add_file("kb1", "fi_r", "refunds.md", TEXT)
    memos = engine("kb1", per_kb=0)
    memos.add_memory("m-kb1", "Refunds", TEXT, 0.9)
    return files, memos


def test_recall_reads_a_kbs_fingerprints_once_while_meta_counts_the_same_files():
    files, memos = _world()
    cache = PrintsCache()
    repo = Repository([[own("kb1")]], file_counts={"kb1": 1})

    first = run(repo, memos, attribution="by_file", files=files, prints=cache)
    second = run(repo, memos, attribution="by_file", files=files, prints=cache)
    repo.file_counts["kb1"] = 2
    third = run(repo, memos, attribution="by_file", files=files, prints=cache)

    assert [r.items[0].file.id for r in (first, second, third)] == ["fi_r"] * 3
    assert files.prints_queries["kb1"] == 2


def test_a_load_slower_than_the_budget_names_no_file_this_time_and_serves_the_next_recall():
    files, memos = _world()
    cache = PrintsCache()
    release = threading.Event()
    files.before_prints = lambda kb_id: release.wait(5)
    repo = Repository([[own("kb1")]])

    late = run(repo, memos, attribution="by_file", files=files, prints=cache, search_seconds=0.2)
    release.set()
    wait_until(lambda: len(cache) == 1, timeout=5, interval=0.01, message="the late load to fill the cache")
    files.before_prints = None
    served = run(repo, memos, attribution="by_file", files=files, prints=cache)

    (item,) = late.items
    assert item.file is None
    assert item.knowledge_base.id == "kb1"
    assert served.items[0].file.id == "fi_r"
    assert files.prints_queries["kb1"] == 1


def test_a_load_that_fails_names_no_file_and_the_recall_is_served():
    files, memos = _world()

    def broken(kb_id: str) -> None:
        raise RuntimeError("table unavailable")

    files.before_prints = broken
    repo = Repository([[own("kb1")]])

    (item,) = run(repo, memos, attribution="by_file", files=files, prints=PrintsCache()).items

    assert item.file is None
    assert item.knowledge_base.id == "kb1"

"""What naming each excerpt's file costs in DynamoDB (``RECALL_ATTRIBUTION=by_file``), per recall, per
ingest and per 1,000 files stored (docs/benchmarks.md, "Cost model").

The calls are those ``bench.route_calls`` counted on the real handlers; their sizes are scaled from that
run's one small document to a typical recall and KB:

* per recall, one strongly consistent ``BatchGetItem`` of the named files' ``FILE#`` items (at most
  ``limit`` keys), and, for each KB of the scope whose fingerprint index the Lambda environment does not
  hold fresh (``memmy_kb.domain.recall.prints_cache``: loaded less than ``PRINTS_TTL_SECONDS`` ago at the KB's
  current file count and bytes), one eventually consistent Query of its ``PRINT#`` items and one of its
  ``FOLDER#`` items;
* per ingest, one ``PutItem`` of the version's ``PRINT#`` item (by its size, 1 KB write units);
* stored, one ``PRINT#`` item per file (a replaced file's old one goes when MemOS switches).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.dynamodb_units import read_units, write_units

if TYPE_CHECKING:
    from bench.route_calls import Calls

# Measured: the fingerprints' encoded size per file, over the attribution corpus (bench.attribution's
# "fingerprints stored" row: 2.6 KB a file on average); the largest the format allows is a 10-byte
# header and 4,096 hashes of 4 bytes.
PRINTS_BYTES_MEAN = 2_660
PRINTS_BYTES_MAX = 10 + 4 * 4_096
# Assumed: the files whose FILE# items one recall reads, at recall's default limit of 9 excerpts: one
# per excerpt (excerpts from one file read it once, unattributed ones none, candidates a few more).
FILES_READ_PER_RECALL = 9
# Assumed: files in a typical KB (a synced folder of READMEs and documents, about 50 files).
FILES_PER_KB = 50
# Assumed: a user's recalls arrive at random through eight busy hours (PEAK_HOUR_SHARE's busy day), each
# in the Lambda environment that served the user's previous one (optimistic: few recall environments
# run at this scale, and Lambda reuses warm ones); another user's recall of a shared KB refreshing it is
# left out (pessimistic).
BUSY_HOURS = 8
# memmy_kb.domain.recall.prints_cache.PRINTS_TTL_SECONDS (the unit test checks it is the same).
PRINTS_TTL_SECONDS = 300.0
# DynamoDB counts 100 bytes of overhead per item in the storage it bills.
ITEM_STORAGE_OVERHEAD = 100
STORAGE_PRICE = (
    0.25  # $ per GB-month, DynamoDB Standard table class, us-east-1 (aws.amazon.com/dynamodb/pricing)
)


def miss_share(
    recalls_per_user_day: float, busy_hours: float = BUSY_HOURS, ttl: float = PRINTS_TTL_SECONDS
) -> float:
    """The share of recalls that find a KB's index stale: no recall of it in the TTL before, with the
    user's recalls a Poisson stream over the busy hours."""
    if recalls_per_user_day <= 0:
        return 1.0
    gap = busy_hours * 3600 / recalls_per_user_day
    return math.exp(-ttl / gap)


@dataclass(frozen=True)
class AttributionCost:
    """DynamoDB units attribution adds, per recall (a scope of ``kbs`` KBs) and per ingest, and storage."""

    kbs: int
    file_rru: float  # one FILE# key of the BatchGetItem (strongly consistent)
    files_rru: float  # the BatchGetItem of FILES_READ_PER_RECALL files
    print_item_bytes: float  # a PRINT# item of PRINTS_BYTES_MEAN fingerprints
    prints_query_rru: float  # one KB's PRINT# Query at FILES_PER_KB files
    folders_query_rru: float  # one KB's FOLDER# Query, as counted
    miss_share: float  # recalls that load a KB's index
    ingest_wru: float  # the PRINT# PutItem at PRINTS_BYTES_MEAN
    ingest_wru_max: float  # at PRINTS_BYTES_MAX

    @property
    def loads_per_recall(self) -> float:
        return self.kbs * self.miss_share

    @property
    def recall_rru(self) -> float:
        return self.files_rru + self.loads_per_recall * (self.prints_query_rru + self.folders_query_rru)

    @property
    def all_stale_rru(self) -> float:
        """A recall's reads when it loads every KB's index."""
        return self.files_rru + self.kbs * (self.prints_query_rru + self.folders_query_rru)

    @property
    def storage_bytes_per_1000_files(self) -> float:
        return 1000 * (self.print_item_bytes + ITEM_STORAGE_OVERHEAD)

    @property
    def storage_dollars_per_1000_files(self) -> float:
        """A month's storage of 1,000 files' PRINT# items."""
        return self.storage_bytes_per_1000_files / 2**30 * STORAGE_PRICE


def attribution_cost(routes: dict[str, Calls], kbs: int, recalls_per_user_day: float) -> AttributionCost:
    """From the counted ``routes`` (bench.route_calls.run()): the counted recall's FILE# key and FOLDER#
    Query, and the counted ingest's PRINT# item less its fingerprints (its keys and other attributes)."""
    recall, ingest = routes["recall"], routes["ingest (S3 trigger)"]
    files = recall.units("BatchGetItem", "FILE#")
    file_rru = files.rru / files.items if files.items else read_units(0, consistent=True)
    put = ingest.units("PutItem", "PRINT#")
    overhead = (put.bytes - put.binary) / put.items if put.items else 0
    item = overhead + PRINTS_BYTES_MEAN
    folders = recall.units("Query", "FOLDER#")
    return AttributionCost(
        kbs=kbs,
        file_rru=file_rru,
        files_rru=FILES_READ_PER_RECALL * file_rru,
        print_item_bytes=item,
        prints_query_rru=read_units(int(FILES_PER_KB * item), consistent=False),
        folders_query_rru=folders.rru / folders.calls if folders.calls else read_units(0, consistent=False),
        miss_share=miss_share(recalls_per_user_day),
        ingest_wru=write_units(int(item)),
        ingest_wru_max=write_units(int(overhead + PRINTS_BYTES_MAX)),
    )


def counted_recall_rru(recall: Calls) -> float:
    """What the counted recall (one KB, one small file, its index not cached) read for attribution."""
    return sum(
        recall.units(op, kind).rru
        for op, kind in (("BatchGetItem", "FILE#"), ("Query", "PRINT#"), ("Query", "FOLDER#"))
    )


def counted_ingest_wru(ingest: Calls) -> float:
    """What the counted ingest (one small file) wrote for attribution."""
    return float(ingest.units("PutItem", "PRINT#").wru)


def rows(cost: AttributionCost, recalls: float, ingests: float) -> list[tuple[str, str]]:
    """The attribution's rows for the cost table: per recall, per ingest, a day's, storage."""
    loads = cost.loads_per_recall
    return [
        (
            "file attribution, DynamoDB reads per recall",
            f"{cost.recall_rru:.1f} RRU = {FILES_READ_PER_RECALL} FILE# items × {cost.file_rru:g} (BatchGetItem, strongly"
            f" consistent; assumed one per excerpt) + {loads:.2f} index loads × ({cost.prints_query_rru:g} PRINT# +"
            f" {cost.folders_query_rru:g} FOLDER#; assumed {FILES_PER_KB} files a KB) ({cost.kbs} KBs × {cost.miss_share:.0%}"
            f" stale: {PRINTS_TTL_SECONDS:.0f} s TTL, recalls at random over {BUSY_HOURS} busy hours);"
            f" {recalls * cost.recall_rru:,.0f} RRU/day; {cost.files_rru:g} to {cost.all_stale_rru:g} RRU with every"
            f" index fresh or none",
        ),
        (
            "file attribution, DynamoDB writes per ingest",
            f"{cost.ingest_wru:g} WRU (one PutItem of a {cost.print_item_bytes / 1024:.1f} KB PRINT# item; at most"
            f" {cost.ingest_wru_max:g}); {ingests * cost.ingest_wru:,.0f} WRU/day",
        ),
        (
            "file attribution, storage per 1,000 files",
            f"{cost.storage_bytes_per_1000_files / 1e6:.1f} MB of PRINT# items = ${cost.storage_dollars_per_1000_files:.4f}"
            f"/month (${STORAGE_PRICE}/GB-month)",
        ),
    ]

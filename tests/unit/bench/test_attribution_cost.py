"""What file attribution costs in DynamoDB, from counted calls (``bench.attribution_cost``), and the kinds
of item a counted call touched (``bench.dynamodb_units.item_kind``)."""

from __future__ import annotations

import math

import pytest

from bench import attribution_cost, cost_model
from bench.dynamodb_units import item_kind
from bench.route_calls import ROUTES, Calls, Units


def _b(size: int) -> dict[str, bytes]:
    return {"B": b"\0" * size}


@pytest.mark.parametrize(
    ("operation", "params", "response", "kind"),
    [
        ("PutItem", {"Item": {"PK": {"S": "KB#k"}, "SK": {"S": "PRINT#f#000001"}, "prints": _b(9)}}, {}, "PRINT#"),
        ("Query", {}, {"Items": [{"SK": {"S": "FOLDER#a"}}, {"SK": {"S": "FOLDER#b"}}]}, "FOLDER#"),
        ("Query", {}, {"Items": [{"SK": {"S": "META#"}}, {"SK": {"S": "UPLOAD#u"}}]}, "META#+UPLOAD#"),
        # A Query that found nothing is named by the prefix it asked for.
        ("Query", {"ExpressionAttributeValues": {":pk": {"S": "KB#k"}, ":prefix": {"S": "FOLDER#"}}}, {"Items": []}, "FOLDER#"),
        ("BatchGetItem", {"RequestItems": {"t": {"Keys": [{"PK": {"S": "KB#k"}, "SK": {"S": "FILE#f"}}]}}}, {}, "FILE#"),
        ("GetItem", {"Key": {"SK": {"S": "META#"}}}, {}, ""),
    ],
)  # fmt: skip
def test_a_call_s_item_kind_is_its_sort_keys_prefix(operation, params, response, kind) -> None:
    assert item_kind(operation, params, response) == kind


def _counted() -> dict[str, Calls]:
    """A counted run: recall read one FILE# key, its KB's PRINT# and FOLDER# items; the ingest put a PRINT#
    item of 300 bytes, 100 of them fingerprints."""
    routes = {name: Calls(function="F") for name in ROUTES}
    recall = routes["recall"]
    recall.rru = 10
    recall.by_kind = {
        ("BatchGetItem", "FILE#"): Units(calls=1, rru=1, items=1, bytes=400),
        ("Query", "PRINT#"): Units(calls=1, rru=0.5, items=1, bytes=300, binary=100),
        ("Query", "FOLDER#"): Units(calls=1, rru=0.5),
    }
    ingest = routes["ingest (S3 trigger)"]
    ingest.wru = 13
    ingest.by_kind = {("PutItem", "PRINT#"): Units(calls=1, wru=1, items=1, bytes=300, binary=100)}
    return routes


def test_a_recall_reads_the_named_files_and_the_stale_indexes_by_dynamodb_s_rules() -> None:
    cost = attribution_cost.attribution_cost(_counted(), kbs=3, recalls_per_user_day=150)

    item = 200 + attribution_cost.PRINTS_BYTES_MEAN  # the counted item's keys and attributes, typical prints
    assert cost.print_item_bytes == item
    assert cost.files_rru == attribution_cost.FILES_READ_PER_RECALL * 1  # strongly consistent, under 4 KB each
    # One KB's PRINT# items read eventually consistent: half a unit per 4 KB of the whole Query.
    assert cost.prints_query_rru == math.ceil(attribution_cost.FILES_PER_KB * item / 4096) * 0.5
    assert cost.recall_rru == pytest.approx(cost.files_rru + 3 * cost.miss_share * (cost.prints_query_rru + 0.5))
    assert cost.files_rru < cost.recall_rru < cost.all_stale_rru
    assert cost.ingest_wru == math.ceil(item / 1024)  # 1 KB write units
    assert cost.ingest_wru_max == math.ceil((200 + attribution_cost.PRINTS_BYTES_MAX) / 1024)
    stored = 1000 * (item + attribution_cost.ITEM_STORAGE_OVERHEAD)
    assert cost.storage_dollars_per_1000_files == pytest.approx(stored / 2**30 * attribution_cost.STORAGE_PRICE)


def test_the_day_replaces_what_the_small_counted_run_read_and_wrote_for_attribution() -> None:
    routes = _counted()
    template = {"Resources": {"F": {"Properties": {}}}}
    day = cost_model.model(routes, template)
    cost = day.attribution
    assert cost is not None

    runs = cost_model.runs_per_day()
    # The counted recall's 2 RRU of attribution (one small file) are replaced by the modelled recall's.
    assert day.quantities["rru"] == pytest.approx(runs["recall"] * (10 - 2 + cost.recall_rru))
    assert day.quantities["wru"] == pytest.approx(runs["ingest (S3 trigger)"] * (13 - 1 + cost.ingest_wru))
    assert cost.miss_share == attribution_cost.miss_share(runs["recall"] / cost_model.USERS)


def test_an_index_is_stale_more_often_the_further_apart_a_user_s_recalls() -> None:
    ttl = attribution_cost.PRINTS_TTL_SECONDS
    busy = attribution_cost.BUSY_HOURS * 3600
    # A recall every TTL on average finds the index fresh when the previous one came within it.
    assert attribution_cost.miss_share(busy / ttl) == pytest.approx(math.exp(-1))
    assert attribution_cost.miss_share(10) > attribution_cost.miss_share(150) > attribution_cost.miss_share(2000)
    assert attribution_cost.miss_share(0) == 1


def test_the_model_s_constants_are_the_code_s() -> None:
    from array import array

    from memmy_kb.domain.fingerprints.prints import MAX_HASHES, Fingerprints
    from memmy_kb.domain.recall.config import DEFAULT_RECALL_LIMIT
    from memmy_kb.domain.recall.prints_cache import PRINTS_TTL_SECONDS

    assert attribution_cost.PRINTS_TTL_SECONDS == PRINTS_TTL_SECONDS
    assert attribution_cost.FILES_READ_PER_RECALL == DEFAULT_RECALL_LIMIT
    largest = Fingerprints(level=0, hashes=array("I", range(MAX_HASHES))).encode()
    assert len(largest) == attribution_cost.PRINTS_BYTES_MAX

"""The ids of ``search``'s results (``<search_id>.<n>``) and what ``fetch`` takes for one."""

from __future__ import annotations

import pytest

from memmy_kb.domain.remote_mcp.hits import hit_id, new_search_id, parse_hit_id


def test_a_hit_id_names_its_search_and_position_and_reads_back() -> None:
    search_id = new_search_id()

    assert search_id != new_search_id()
    assert parse_hit_id(hit_id(search_id, 7)) == (search_id, 7)


@pytest.mark.parametrize(
    "value",
    ["", "s0", "nodot", "s" + "a" * 24, "s" + "a" * 24 + ".", "s" + "a" * 24 + ".x", "s" + "A" * 24 + ".1",
     "s" + "a" * 24 + ".1000", "s" + "a" * 24 + ".-1", "s" + "a" * 24 + ".١", "../etc.1"],
)
def test_anything_else_is_no_hit_id(value: str) -> None:
    assert parse_hit_id(value) is None


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "s" + "0" * n + ".1",  # a search id far too long: the fixed-length pattern fails at once
        lambda n: "." * n,  # dots only
        lambda n: "s" + "a" * 24 + "." + "9" * n,  # a position far too long
    ],
)
def test_reading_a_hit_id_is_linear_in_its_length(make):
    # The id comes from the client's fetch call.
    from tests.support.linear_time import assert_linear_time

    assert_linear_time(parse_hit_id, make, large=256 * 1024)

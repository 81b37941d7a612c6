"""The header patterns of ``memmy_kb.api.mcp.headers`` read what a client sends (``Mcp-Name``, the other
request-metadata headers): each takes time linear in the header's length, whatever its content."""

from __future__ import annotations

import base64

import pytest

from memmy_kb.api.mcp.headers import decode_header_value
from tests.support.linear_time import assert_linear_time

# A header value the size of the whole body limit, far past anything a gateway passes on.
LARGE = 64 * 1024

HOSTILE = {
    # A sentinel's opening repeated, never closed: `.*` runs to the end and the anchored `?=` fails once.
    "unclosed sentinel": lambda n: "=?base64?" + "?=x" * (n // 3),
    # Many would-be closings: the one `.*` meets each, only the last can end the value.
    "closings everywhere": lambda n: "=?base64?" + "?=" * (n // 2) + "x",
    # Printable characters, then one that is not: the class runs once and fails at the end.
    "bad last character": lambda n: " " * n + "\x00",
    # A long valid base64 payload, decoded and re-encoded once.
    "long payload": lambda n: "=?base64?" + base64.b64encode(b"a" * (n * 3 // 4)).decode() + "?=",
}


@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_decoding_a_header_value_is_linear_in_its_length(shape):
    assert_linear_time(decode_header_value, HOSTILE[shape], large=LARGE)

"""Request bodies shaped against a guard that scans JSON text: each of exactly ``size`` bytes of UTF-8.

The cloud's request guard and the desktop service's body guard are held to the same cases (and to the same
answers: ``tests/unit/client/desktop/test_desktop_bodies.py`` checks that both rules agree on each), and ``make bench``
times both on them (``bench/worst_case_body.py``). The first shape is the
one that made the regex that skipped strings quadratic: an unterminated string of escaped quotes, from
every one of which the regex was retried to the end of the body (12 s for 64 KB).
"""

from __future__ import annotations

from collections.abc import Callable

HEAD = '{"query": "x", "pad": "'


def _fill(prefix: str, unit: str, size: int, suffix: str = "") -> str:
    """``prefix``, ``unit`` repeated, then ``suffix``, padded with spaces to exactly ``size`` bytes."""
    room = size - len((prefix + suffix).encode())
    body = prefix + unit * (room // len(unit.encode())) + suffix
    return body + " " * (size - len(body.encode()))


SHAPES: dict[str, Callable[[int], str]] = {
    "unterminated escaped quotes": lambda size: _fill(HEAD, '\\"', size),
    "escaped quotes, closed": lambda size: _fill(HEAD, '\\"', size, '"}'),
    "a run of backslashes, unterminated": lambda size: _fill(HEAD, "\\", size),
    "a run of escaped backslashes, closed": lambda size: _fill(HEAD, "\\\\", size, '"}'),
    "escaped backslash then quote": lambda size: _fill(HEAD, '\\\\"', size),
    "unicode escapes": lambda size: _fill(HEAD, "\\u0041", size, '"}'),
    "bare \\u escapes": lambda size: _fill(HEAD, "\\u", size, '"}'),
    "brackets inside a string": lambda size: _fill(HEAD, "[{", size, '"}'),
    "brackets inside an unterminated string": lambda size: _fill(HEAD, "[{", size),
    "deep brackets": lambda size: _fill('{"query": ', "[", size),
    "bracket pairs": lambda size: _fill('{"query": [', "[],", size, "[]]}"),
    "closing then opening": lambda size: _fill("", "]", size // 2) + _fill("", "[", size - size // 2),
    "empty strings": lambda size: _fill('{"query": [', '"",', size, '""]}'),
    "quotes only": lambda size: _fill("", '"', size),
    "plain text": lambda size: _fill('{"query": "', "refund policy ", size, '"}'),
    "chinese text": lambda size: _fill('{"query": "', "差旅报销", size, '"}'),
}

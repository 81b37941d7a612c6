"""``.memmyignore`` lines that a backtracking matcher takes exponential time on, and the paths that make it
do so: shared by the linear-time tests (tests/unit/client/sync/test_sync_ignore.py) and ``make bench``
(bench/ignore_patterns.py).

Against a name that almost matches (a run of the letter they repeat, then the wrong last one), the
first, fourth and fifth take Python's backtracking ``re`` minutes to years at 255 characters (``*a`` seven
times: 0.7 ms at 16 characters, 0.2 s at 32, 76 s at 64; five ``*a`` froze the desktop for some 20 s at
200); pathspec folds the chains of ``**/``, kept here for any matcher that would not.
"""

from __future__ import annotations

PATTERNS = (
    "*a*a*a*a*a*a*a*b",
    "**/" * 30 + "*a*a*a*b",
    "a/**/**/**/**/**/**/**/**/b",
    "*[ab]*[ab]*[ab]*[ab]*[ab]*c",
    "?*?*?*?*?*?*?*?*b",
)
LONGEST_NAME = 255  # the longest file or folder name the service takes


def almost_matching(size: int) -> str:
    """A path of ``size`` characters that the patterns almost match: names of ``a`` of 255 characters at
    most, ending in one that is neither ``b`` nor ``c``."""
    names, left = [], size
    while left > 0:
        names.append("a" * min(LONGEST_NAME, left))
        left -= len(names[-1]) + 1
    return "/".join(names)[:size]

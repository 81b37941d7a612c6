"""``.memmyignore`` matched in linear time (``memmy_kb_client.sync.ignore``, RE2 through ``pathspec``):
the patterns that made Python's backtracking ``re`` run for seconds to hours against one long name take
time in proportion to the name, gitignore's meaning is kept (negation, folder patterns, anchors), and a
line RE2 cannot take stops the pass with a sentence instead of being read as nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from pathspec import GitIgnoreSpec

from memmy_kb_client.sync.ignore import compile_ignore
from memmy_kb_client.sync.local import scan_folder
from tests.support.hostile_patterns import PATTERNS, almost_matching
from tests.support.linear_time import assert_linear_time, assert_within


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_worst_patterns_against_a_255_character_name_take_linear_time(pattern: str) -> None:
    spec = compile_ignore([pattern])
    assert spec.match_file("a" * 254 + "d") is False
    assert_within(spec.match_file, almost_matching(255), 2.0)  # µs here; Python's re: minutes to years
    assert_linear_time(spec.match_file, almost_matching, large=64 * 1024)


def test_the_worst_pattern_still_names_what_it_names() -> None:
    spec = compile_ignore([PATTERNS[0], "!keep*"])
    assert spec.match_file("a" * 253 + "b")
    assert spec.match_file("sub/xaaaaaaab")
    assert not spec.match_file("keep" + "a" * 250 + "b")


# Lines of every kind gitignore has, and paths that tell them apart.
LINES = (
    "build/",
    "drafts/*",
    "!drafts/keep.md",
    "logs/",
    "*.tmp.md",
    "/top.md",
    "a/**/b.md",
    "**/deep/",
    "doc?.md",
    "[abc]*.md",
    "[!x-z]q.md",
    "\\#x.md",
    "sp ace.md",
    "!c*.md",
)
PATHS = (
    "build/",
    "build/x.md",
    "a/build/y.md",
    "drafts/keep.md",
    "drafts/x.md",
    "drafts/sub/",
    "deep/logs/l.md",
    "logs/",
    "q.tmp.md",
    "top.md",
    "s/top.md",
    "a/b.md",
    "a/c/d/b.md",
    "z/deep/",
    "deep/",
    "doc1.md",
    "doc12.md",
    "a.md",
    "b/x.md",
    "c.md",
    "wq.md",
    "xq.md",
    "#x.md",
    "sp ace.md",
    "café.md",
)


def test_gitignores_meaning_is_that_of_pathspecs_own_matcher() -> None:
    ours, theirs = compile_ignore(LINES), GitIgnoreSpec.from_lines(LINES, backend="simple")
    assert {p: ours.match_file(p) for p in PATHS} == {p: theirs.match_file(p) for p in PATHS}
    assert sum(ours.match_file(p) for p in PATHS) > len(PATHS) // 3  # the lines do leave things out


@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")  # pathspec's re, on [[:alpha:]]
@pytest.mark.parametrize(
    ("lines", "sentence"),
    [
        (
            "ok.md\n[[:alpha:]]\n",
            r"\.memmyignore line 2 \('\[\[:alpha:\]\]'\) cannot be matched in linear time",
        ),
        ("private\\\n", r"\.memmyignore has a line that is no pattern"),
    ],
)
def test_a_line_that_cannot_be_matched_stops_the_pass_with_a_sentence(
    tmp_path: Path, lines: str, sentence: str
) -> None:
    (tmp_path / "a.md").write_text("a", encoding="utf-8")
    (tmp_path / ".memmyignore").write_text(lines, encoding="utf-8")
    with pytest.raises(OSError, match=sentence):
        scan_folder(tmp_path)

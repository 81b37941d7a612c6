"""Recall's answered hits, attributed, re-checked and merged (docs/architecture.md, "Recall").

Each hit of a search is named from the MemOS file ids it gives, when it gives any that are files of the
KBs that search covered, else matched against the fingerprints of those KBs' file versions
(``memmy_kb.domain.recall.file_attribution``). Then the scope read again after the searches decides:

* a hit attributed to files is kept only while every KB of those files is still in the scope (candidates
  spanning two KBs, one of which left, are dropped);
* a hit attributed to no file could come from any KB its search covered: it is dropped whenever one of
  them left.

The hits left are ranked by score, at most ``max_per_kb`` from one KB (a hit naming several KBs counts
against those KBs together: that many per KB of them) and ``limit`` in all; then the files they name
are read as they are now (one ``BatchGetItem``) and each excerpt carries its file (or candidates) and
its KB (or the KBs it could be from).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memmy_kb.domain.recall.file_attribution import attribute_files, name_files

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from memmy_kb.domain.engine import SearchHit
    from memmy_kb.domain.recall.context_block import SourceFile, SourceKb
    from memmy_kb.domain.recall.prints_cache import FileKey, KbPrints, RecallFiles
    from memmy_kb.records import GrantRecord

    # One answered search: its hits, and the grants of the KBs it covered.
    Answered = tuple[tuple[SearchHit, ...], tuple[GrantRecord, ...]]


@dataclass(frozen=True)
class Merged:
    """The hits kept, best first, each with the KBs and files it names; ``attributed``: how many of them
    name a file (one or candidates); ``dropped``: hits dropped because a KB left the scope."""

    hits: list[tuple[SearchHit, tuple[SourceKb, ...], tuple[SourceFile, ...]]]
    attributed: int
    dropped: int


@dataclass(frozen=True)
class _Found:
    hit: SearchHit
    order: tuple[int, int]
    grants: tuple[GrantRecord, ...]  # the KBs it names: its files' KBs, or every KB of its search
    files: tuple[FileKey, ...]


def _attributed(answered: list[Answered], ready: Mapping[str, KbPrints]) -> list[_Found]:
    found: list[_Found] = []
    for index, (hits, searched) in enumerate(answered):
        grants = {g.kb_id: g for g in searched}
        for rank, hit in enumerate(hits):
            files = attribute_files(hit.content, grants, ready, hit.memos_file_ids)
            named = dict.fromkeys(kb_id for kb_id, _, _ in files) if files else grants
            found.append(_Found(hit, (index, rank), tuple(grants[kb_id] for kb_id in named), files))
    return found


def merge_answered(
    answered: list[Answered],
    *,
    in_scope: frozenset[str],
    ready: Mapping[str, KbPrints],
    files: RecallFiles | None,
    limit: int,
    max_per_kb: int,
    relevance: Callable[[SearchHit], float],
    source: Callable[[GrantRecord], SourceKb],
) -> Merged:
    """The ``answered`` searches' hits attributed, those of KBs no longer ``in_scope`` (kb ids) dropped,
    the rest merged and their files named."""
    found = _attributed(answered, ready)
    kept = [f for f in found if all(g.kb_id in in_scope for g in f.grants)]
    kept.sort(key=lambda f: (-relevance(f.hit), f.order))
    taken: dict[frozenset[str], int] = {}
    merged: list[_Found] = []
    for f in kept:
        if len(merged) >= limit:
            break
        kbs = frozenset(g.kb_id for g in f.grants)
        if taken.get(kbs, 0) >= max_per_kb * len(kbs):
            continue
        taken[kbs] = taken.get(kbs, 0) + 1
        merged.append(f)
    named = name_files(files, ready, [f.files for f in merged]) if files is not None else [() for _ in merged]
    return Merged(
        [(f.hit, tuple(source(g) for g in f.grants), n) for f, n in zip(merged, named, strict=True)],
        attributed=sum(1 for n in named if n),
        dropped=len(found) - len(kept),
    )

"""Recognising a file's text in a search hit: sampled shingle fingerprints (docs/architecture.md, "Recall").

A MemOS hit names no file, and its text need not be the document's verbatim (a memory system may drop,
replace or reorder words). So the ingest keeps, per file version, a sample of the hashes of its text's
*shingles* (every run of ``SHINGLE`` consecutive tokens after normalising: NFKC, case folded, punctuation
gone; a CJK character is a token of its own, any other run of letters and digits one token). Recall hashes
a hit's shingles the same way and asks, per candidate file, what share of the hit's sampled hashes the
file holds (its *containment*).

The sample is consistent, not positional: a hash is kept when its mixed value's top ``level`` bits are 0
(``level_of``), so the same shingle is kept in the file and in the hit whatever surrounds it, which
rewording and sentence shuffling do not disturb (winnowing's windows would). A file keeps every hash
(level 0) until it has more than ``MAX_HASHES`` distinct ones; each time it passes that, the level goes
up by one and the hashes below it are dropped: bounded memory for a file of any size, at most
``MAX_HASHES`` 4-byte hashes stored. A hit is judged against a file only on the hashes sampled at that
file's level.

``attribute`` names one file when its containment is clear, the few candidates when several files hold
the text about equally (a licence in two folders), and none when nothing holds enough of it: a file is
never named on a weak match.
"""

from __future__ import annotations

import re
import struct
import unicodedata
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

SHINGLE: Final = 3
MAX_HASHES: Final = 4096
MAX_LEVEL: Final = 24
# A file is named when at least this share of the hit's sampled hashes are its own, and at least
# MIN_MATCHED of them; files within CANDIDATE_RATIO of the best are named with it (at most MAX_CANDIDATES).
MIN_CONTAINMENT: Final = 0.25
MIN_MATCHED: Final = 3
MIN_SAMPLED: Final = 4
CANDIDATE_RATIO: Final = 0.8
MAX_CANDIDATES: Final = 4
# A candidate held in full by another that holds at least this many more of the hit's hashes is dropped.
MIN_DISTINCT: Final = 2
FORMAT: Final = b"MKFP"
_HEADER: Final = struct.Struct("<4sBBI")  # magic, shingle size, level, count

_CJK = "\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_MIX: Final = 0x9E3779B1
_MASK: Final = 0xFFFFFFFF


def tokens(text: str) -> Iterator[str]:
    """``text``'s tokens: NFKC, case folded; each CJK character alone, other letter/digit runs whole."""
    for match in _TOKEN.finditer(unicodedata.normalize("NFKC", text).casefold()):
        yield match.group()


def shingle_hashes(words: Iterable[str], carry: list[str] | None = None) -> Iterator[int]:
    """The 32-bit hash of every run of ``SHINGLE`` consecutive ``words``. ``carry`` (the last words of the
    previous chunk, updated in place) lets a text given in chunks hash exactly as when given whole."""
    window = carry if carry is not None else []
    for word in words:
        window.append(word)
        if len(window) > SHINGLE:
            del window[0]
        if len(window) == SHINGLE:
            yield _mixed(zlib.crc32("\x1f".join(window).encode()))


def _mixed(crc: int) -> int:
    return (crc * _MIX) & _MASK


def level_of(value: int) -> int:
    """How many of the hash's top bits are 0: it is in a sample of level ``n`` when ``level_of >= n``."""
    return min(32 - value.bit_length(), MAX_LEVEL)


@dataclass(frozen=True)
class Fingerprints:
    """A file version's sampled hashes (sorted, distinct), at ``level``."""

    level: int
    hashes: array[int]

    def encode(self) -> bytes:
        """The stored form: a small header, then the hashes as little-endian 4-byte integers."""
        body = array("I", self.hashes)
        if body.itemsize != 4:  # pragma: no cover - every platform we run on has a 4-byte "I"
            raise RuntimeError("array('I') is not 4 bytes here")
        if struct.pack("=I", 1) != struct.pack("<I", 1):  # pragma: no cover - big-endian hosts
            body.byteswap()
        return _HEADER.pack(FORMAT, SHINGLE, self.level, len(body)) + body.tobytes()

    @classmethod
    def decode(cls, data: bytes) -> Fingerprints:
        """The ``encode``d form back; ``ValueError`` for anything else (another shingle size included)."""
        if len(data) < _HEADER.size:
            raise ValueError("not a fingerprint record")
        magic, size, level, count = _HEADER.unpack_from(data)
        # A level past MAX_LEVEL is no sampler's, and would index past ``attribute``'s table of levels.
        if magic != FORMAT or size != SHINGLE or level > MAX_LEVEL or len(data) != _HEADER.size + 4 * count:
            raise ValueError("not a fingerprint record of this format")
        hashes = array("I")
        hashes.frombytes(data[_HEADER.size :])
        if struct.pack("=I", 1) != struct.pack("<I", 1):  # pragma: no cover - big-endian hosts
            hashes.byteswap()
        return cls(level, hashes)


class Sampler:
    """Collects a text's sampled hashes chunk by chunk, in bounded memory (at most ``limit`` kept)."""

    def __init__(self, limit: int = MAX_HASHES) -> None:
        self.limit = limit
        self.level = 0
        self._kept: set[int] = set()
        self._carry: list[str] = []

    def add(self, text: str) -> None:
        """More of the text. A token cut by the chunk boundary is read as two: give whole lines or
        paragraphs where you can (the ingest gives decoded chunks; a cut costs at most a few shingles)."""
        # ``shingle_hashes`` over ``tokens``, unrolled: the ingest runs this over a whole file's text, and
        # this form is about twice as fast. A hash is in the sample of level n when it is below 2**(32 - n).
        words = self._carry + _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())
        self._carry = words[-(SHINGLE - 1) :]
        bound = 1 << (32 - self.level)
        for shingle in zip(*(words[n:] for n in range(SHINGLE)), strict=False):
            value = (zlib.crc32("\x1f".join(shingle).encode()) * _MIX) & _MASK
            if value < bound:
                self._kept.add(value)
                if len(self._kept) > self.limit:
                    self._raise_level()
                    bound = 1 << (32 - self.level)

    def _raise_level(self) -> None:
        while len(self._kept) > self.limit and self.level < MAX_LEVEL:
            self.level += 1
            self._kept = {v for v in self._kept if level_of(v) >= self.level}

    def result(self) -> Fingerprints:
        return Fingerprints(self.level, array("I", sorted(self._kept)))


def fingerprint(chunks: Iterable[str], limit: int = MAX_HASHES) -> Fingerprints:
    """The fingerprints of a text given in chunks."""
    sampler = Sampler(limit)
    for chunk in chunks:
        sampler.add(chunk)
    return sampler.result()


K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Attribution(Generic[K]):
    """What a hit's text says about its file: ``files`` is one file (clear), a few (candidates), or none."""

    files: tuple[K, ...]
    containment: float = 0.0

    @property
    def clear(self) -> bool:
        return len(self.files) == 1


class FileIndex(Generic[K]):
    """The files a hit may come from, looked up by hash: one sorted array of every file's hashes, with the
    file each belongs to (memory: about 8 bytes a hash; lookups by bisection)."""

    def __init__(self, files: Mapping[K, Fingerprints]) -> None:
        self.keys: list[K] = list(files)
        self.levels = [files[key].level for key in self.keys]
        pairs = sorted((h, n) for n, key in enumerate(self.keys) for h in files[key].hashes)
        self._hashes = array("I", (h for h, _ in pairs))
        self._owners = array("I", (n for _, n in pairs))

    def __len__(self) -> int:
        return len(self.keys)

    def holders(self, value: int) -> Iterator[int]:
        """The indexes (into ``keys``) of the files holding ``value``."""
        at = bisect_left(self._hashes, value)
        while at < len(self._hashes) and self._hashes[at] == value:
            yield self._owners[at]
            at += 1


def hit_hashes(text: str) -> set[int]:
    """A hit's distinct shingle hashes (all of them: each file samples them at its own level)."""
    return set(shingle_hashes(tokens(text)))


@dataclass(frozen=True)
class _Scored(Generic[K]):
    """One file's match of a hit: its share of the hit's hashes sampled at its level, and those it holds."""

    share: float
    key: K
    held: frozenset[int]
    level: int


def _dominated(file: _Scored[K], other: _Scored[K]) -> bool:
    """Whether ``other`` holds every hash of the hit that ``file`` holds, and ``MIN_DISTINCT`` more (on the
    hashes both sample): a licence's copyright line, a README's package name, tells one from its twins."""
    level = max(file.level, other.level)
    own = sum(1 for value in file.held - other.held if level_of(value) >= level)
    more = sum(1 for value in other.held - file.held if level_of(value) >= level)
    return own == 0 and more >= MIN_DISTINCT


def attribute(text: str, indexes: Sequence[FileIndex[K]]) -> Attribution[K]:
    """Which files of ``indexes`` hold ``text``: one when clear, the few candidates within
    ``CANDIDATE_RATIO`` of the best that no other candidate dominates (``_dominated``), or none when the
    best holds too little of it (or too many tie)."""
    values = hit_hashes(text)
    if not values:
        return Attribution(())
    by_level = [0] * (MAX_LEVEL + 1)
    for value in values:
        by_level[level_of(value)] += 1
    at_least = [0] * (MAX_LEVEL + 2)  # at_least[n]: the hit's hashes sampled at level n
    for level in range(MAX_LEVEL, -1, -1):
        at_least[level] = at_least[level + 1] + by_level[level]
    scored: list[_Scored[K]] = []
    for index in indexes:
        matched: dict[int, set[int]] = {}
        for value in values:
            for owner in index.holders(value):
                matched.setdefault(owner, set()).add(value)
        for owner, held in matched.items():
            level = index.levels[owner]
            sampled = at_least[level]
            if sampled >= MIN_SAMPLED and len(held) >= MIN_MATCHED:
                scored.append(_Scored(len(held) / sampled, index.keys[owner], frozenset(held), level))
    if not scored:
        return Attribution(())
    scored.sort(key=lambda s: (-s.share, -len(s.held)))
    best = scored[0].share
    if best < MIN_CONTAINMENT:
        return Attribution(())
    close = [s for s in scored if s.share >= best * CANDIDATE_RATIO]
    kept = [s for s in close if not any(_dominated(s, other) for other in close if other is not s)]
    if len(kept) > MAX_CANDIDATES:
        return Attribution((), best)
    return Attribution(tuple(s.key for s in kept), best)

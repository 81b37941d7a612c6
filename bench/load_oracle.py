"""The oracle of ``make load`` (``bench.load``): pure functions over a recorded history, no I/O.

**During the run: recall scope.** Every KB's documents carry a marker token unique to that KB, so each
excerpt a recall returns names the KB it came from. A request that can change whether ``user`` recalls
``kb`` is a ``Change`` with the client-side times it was sent (``start``) and answered (``end``); its
effect landed somewhere in between, in an order we cannot see when two overlap:

- ``off``: a revoke, a leave, a recall toggle turned off, or the KB deleted (``user`` = ``ANY_USER``),
  each *known* to have succeeded (a 2xx answer);
- ``on``: the KB's creation (for its owner), a share, a toggle turned on, whether known to have
  succeeded or of unknown outcome (a 5xx or no answer: then ``end`` is when we stopped waiting, or
  ``math.inf``).

Every (user, KB) starts off, as if an ``off`` change had completed at minus infinity. A recall that
returned an excerpt of ``kb`` violates the scope guarantee when some ``off`` change completed before the
recall started (``off.end < recall.start``) and no ``on`` change could have landed after it and before
the recall ended: none with ``on.end > off.start`` (it may have landed after the off) and
``on.start < recall.end`` (and before the recall's read). A completed deletion excludes the KB whatever
overlapped it (a deleted KB cannot come back). A change in flight during the recall is never held
against the service.

**Ways of reading.** A user may read a KB directly and through one or more teams, and keeps it until
every way is gone, so each change names the way it changes (``via``): ``DIRECT`` (creation, share,
revoke, leave), ``team:<id>`` (the team changes of ``bench.load_oracle_teams``), or ``ALL_PATHS`` (a
recall toggle sets the grant and every membership through which the KB is read). The rule above is
applied to each way the user could have read the KB (the direct one, and every team some ``on`` change
names), with the ``ALL_PATHS`` changes counting for each; the KB is out of scope only when every way is.

**After the run: nothing lost.** ``membership_after`` and ``recall_setting_after`` turn the successful
shares, removals and toggles of one (reader, KB) into the state the server must hold (or ``None`` when
an unknown outcome or an overlap makes it undetermined); ``compare_sets`` and ``memos_residue`` compare
the server's lists and the MemOS emulator's state with that model.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

ANY_USER: Final = "*"
"""The ``user`` of a change that removes every user's access at once (the KB's deletion)."""
DIRECT: Final = "direct"
"""The ``via`` of a change to the user's own access: the KB's creation, a share, a revoke, a leave."""
ALL_PATHS: Final = "*"
"""The ``via`` of a change to every way the user reads the KB at once: a recall toggle."""

MARKER_PREFIX: Final = "kbm"
MARKER_PATTERN: Final = re.compile(r"\b" + MARKER_PREFIX + r"[0-9a-f]{12}\b")
UPLOAD_ID_PATTERN: Final = re.compile(r"\[(up_[0-9A-Za-z]+)\]")

Effect = Literal["on", "off"]


@dataclass(frozen=True)
class Change:
    """A request that may have changed whether ``user`` (or ``ANY_USER``) recalls ``kb``."""

    user: str
    kb: str
    effect: Effect
    start: float
    end: float
    what: str  # create, share, toggle-on, toggle-off, revoke, leave, delete-kb, team-... (+ "?": uncertain)
    via: str = DIRECT  # the way of reading it changes: DIRECT, ALL_PATHS, or "team:<id>"


@dataclass(frozen=True)
class Recall:
    """One answered recall: who asked, when, and the markers found in its excerpts (titles and text)."""

    user: str
    start: float
    end: float
    markers: tuple[str, ...]
    excerpts: int = 0


@dataclass(frozen=True)
class Violation:
    kind: str  # scope, unknown-marker, lost-grant, unexpected-grant, recall-setting, lost-file, ...
    detail: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.detail}"


@dataclass
class ScopeCheck:
    """What the scope oracle looked at, and what it found."""

    recalls: int = 0
    excerpts: int = 0
    attributed: int = 0  # (recall, KB) pairs named by a marker
    must_exclude: int = 0  # (recall, KB with documents) pairs that had to stay out of the answer
    must_exclude_by: Counter[str] = field(default_factory=Counter)  # ...by what excluded them
    violations: list[Violation] = field(default_factory=list)


def markers_in(texts: Iterable[str]) -> tuple[str, ...]:
    """Every distinct marker token in ``texts``, in order of first appearance."""
    seen: dict[str, None] = {}
    for text in texts:
        for found in MARKER_PATTERN.findall(text):
            seen.setdefault(found, None)
    return tuple(seen)


class ScopeOracle:
    """Decides, from the changes, whether a (user, KB) was definitely out of scope during a time span."""

    def __init__(self, changes: Iterable[Change]) -> None:
        self._on: dict[tuple[str, str], list[Change]] = defaultdict(list)
        self._off: dict[tuple[str, str], list[Change]] = defaultdict(list)
        for change in changes:
            (self._on if change.effect == "on" else self._off)[(change.user, change.kb)].append(change)

    def excluding_change(self, user: str, kb: str, start: float, end: float) -> Change | None:
        """An ``off`` change proving ``kb`` was out of ``user``'s scope for all of [start, end], or None.

        The initial state (never shared) is the change ``initial`` at minus infinity. A deletion proves
        it alone; otherwise every way of reading needs its proof (the latest of them is returned).
        """
        # A deletion is final: nothing can give a deleted KB back, whatever overlapped it.
        deletions = [off for off in self._off.get((ANY_USER, kb), []) if off.end < start]
        if deletions:
            return max(deletions, key=lambda c: c.end)
        ons = self._on.get((user, kb), [])
        offs = self._off.get((user, kb), [])
        proofs: list[Change] = []
        for via in sorted({DIRECT} | {on.via for on in ons if on.via != ALL_PATHS}):
            proof = _path_excluded(
                Change(user, kb, "off", -math.inf, -math.inf, "never-granted", via),
                [on for on in ons if on.via in (via, ALL_PATHS)],
                [off for off in offs if off.via in (via, ALL_PATHS)],
                start,
                end,
            )
            if proof is None:
                return None
            proofs.append(proof)
        return max(proofs, key=lambda c: c.end)


def _path_excluded(
    initial: Change, ons: Sequence[Change], offs: Sequence[Change], start: float, end: float
) -> Change | None:
    """The latest ``off`` of one way of reading that completed before ``start`` with no ``on`` that could
    have landed after it and before ``end``, or None."""
    for off in sorted([initial, *offs], key=lambda c: c.end, reverse=True):
        if off.end >= start:
            continue
        if not any(on.end > off.start and on.start < end for on in ons):
            return off
    return None


def check_scope(
    changes: Iterable[Change],
    recalls: Iterable[Recall],
    marker_kbs: Mapping[str, str],
    documents_since: Mapping[str, float] | None = None,
) -> ScopeCheck:
    """Check every recall against the changes; ``marker_kbs`` maps a marker to its KB.

    ``documents_since`` (KB -> when its first document was stored) only feeds the ``must_exclude``
    count, which says how many exclusions the run actually put to the test.
    """
    oracle = ScopeOracle(changes)
    check = ScopeCheck()
    documents_since = documents_since or {}
    for recall in recalls:
        check.recalls += 1
        check.excerpts += recall.excerpts
        returned: set[str] = set()
        for marker in recall.markers:
            kb = marker_kbs.get(marker)
            if kb is None:
                check.violations.append(
                    Violation(
                        "unknown-marker",
                        f"{recall.user}'s recall [{recall.start:.3f}, {recall.end:.3f}] returned marker "
                        f"{marker}, which belongs to no KB this run created",
                    )
                )
                continue
            returned.add(kb)
            check.attributed += 1
            proof = oracle.excluding_change(recall.user, kb, recall.start, recall.end)
            if proof is not None:
                check.violations.append(
                    Violation(
                        "scope",
                        f"{recall.user}'s recall [{recall.start:.3f}, {recall.end:.3f}] returned an excerpt "
                        f"of {kb} (marker {marker}), out of scope since {proof.what} "
                        f"[{proof.start:.3f}, {proof.end:.3f}] completed and nothing could have "
                        "given it back before the recall ended",
                    )
                )
        for kb, since in documents_since.items():
            if kb in returned or since >= recall.start:
                continue
            proof = oracle.excluding_change(recall.user, kb, recall.start, recall.end)
            if proof is not None:
                check.must_exclude += 1
                check.must_exclude_by[proof.what] += 1
    return check


# ------------------------------------------------------------------------------------- after the run


@dataclass(frozen=True)
class Outcome:
    """A request's interval and whether it succeeded (True), was refused (False) or is unknown (None)."""

    start: float
    end: float
    ok: bool | None


def membership_after(shares: Sequence[Outcome], removals: Sequence[Outcome]) -> bool | None:
    """Whether the reader must hold a grant at the end: None when an outcome is unknown.

    A share succeeds only on a non-member and a removal (revoke or leave) only on a member, so each
    success flips the state and the successes must alternate: the state is ``#shares - #removals``,
    which must be 0 or 1. Anything else means the server accepted a share or a removal it could not
    have (``ValueError``, which the caller reports).
    """
    if any(o.ok is None for o in (*shares, *removals)):
        return None
    balance = sum(1 for o in shares if o.ok) - sum(1 for o in removals if o.ok)
    if balance not in (0, 1):
        raise ValueError(f"{balance} more successful shares than removals")
    return balance == 1


def recall_setting_after(
    granted: Outcome, toggles: Sequence[tuple[Outcome, bool]], *, default: bool = True
) -> bool | None:
    """The recall setting of the grant the last successful share (or the creation) made, or None.

    Toggles are the grant holder's own, sequential requests; the last successful one that started after
    the grant was made decides. A successful toggle overlapping the grant's making (it may have hit an
    earlier grant) or one of unknown outcome after it leaves the setting undetermined.
    """
    setting = default
    for outcome, enabled in sorted(toggles, key=lambda t: t[0].start):
        overlaps = outcome.start < granted.end and outcome.end > granted.start
        if overlaps and outcome.ok is not False:
            return None
        if outcome.start >= granted.end:
            if outcome.ok is None:
                return None
            if outcome.ok:
                setting = enabled
    return setting


def compare_sets(kind: str, where: str, expected: Iterable[Any], actual: Iterable[Any]) -> list[Violation]:
    """``lost-<kind>`` for what the model expects and the server lacks, ``unexpected-<kind>`` for the rest."""
    want, have = set(expected), set(actual)
    found = [Violation(f"lost-{kind}", f"{where}: {item} missing") for item in sorted(want - have, key=str)]
    found += [
        Violation(f"unexpected-{kind}", f"{where}: {item} present") for item in sorted(have - want, key=str)
    ]
    return found


def memos_residue(
    state: Mapping[str, Any], live_files: Mapping[str, Iterable[str]], *, prefix: str = "memmy:"
) -> list[Violation]:
    """MemOS holds exactly the live KBs, each with exactly its live files (by upload id).

    ``state`` is the emulator's ``/_emulator/state``; ``live_files`` maps each live KB id to the upload
    ids of its files. A MemOS KB or file that nothing live refers to is residue; a live one missing in
    MemOS is lost.
    """
    found: list[Violation] = []
    memos: dict[str, Mapping[str, Any]] = {}
    for kb in state.get("knowledge_bases", []):
        name = str(kb.get("name", ""))
        kb_id = name[len(prefix) :] if name.startswith(prefix) else name
        memos[kb_id] = kb
    for kb_id, kb in sorted(memos.items()):
        if kb_id not in live_files:
            files = len(kb.get("files", []))
            found.append(Violation("memos-residue", f"MemOS still holds KB {kb.get('name')} ({files} files)"))
    for kb_id, uploads in sorted(live_files.items()):
        kb = memos.get(kb_id)
        if kb is None:
            found.append(Violation("memos-lost", f"live KB {kb_id} has no MemOS KB"))
            continue
        in_memos: list[str] = []
        for item in kb.get("files", []):
            match = UPLOAD_ID_PATTERN.search(str(item.get("name", "")))
            in_memos.append(match.group(1) if match else f"<unnamed {item.get('id')}>")
        want = set(uploads)
        found += [
            Violation("memos-residue", f"MemOS KB of {kb_id} still holds the file of {u}")
            for u in sorted(set(in_memos) - want)
        ]
        found += [
            Violation("memos-lost", f"MemOS KB of {kb_id} lacks the file of {u}")
            for u in sorted(want - set(in_memos))
        ]
        duplicates = sorted({u for u in in_memos if in_memos.count(u) > 1})
        found += [Violation("memos-duplicate", f"MemOS KB of {kb_id} holds {u} twice") for u in duplicates]
    return found

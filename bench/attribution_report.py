"""The attribution bench's run (``bench.attribution``): the hits collected once, then attributed with the
fingerprints' constants as shipped and with a few others (patched here, for the comparison only), and with
one proposed change to the rule (``attribute_dominant``), each in verbatim and rewrite modes.

``python -m bench.attribution_report``
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

from bench import attribution
from memmy_kb.domain import fingerprints as fp

# name -> the fingerprints' constants it changes ("distinct": attribute_dominant with that many).
VARIANTS: dict[str, dict[str, Any]] = {
    "as shipped": {},
    "CANDIDATE_RATIO 0.95": {"CANDIDATE_RATIO": 0.95},
    "SHINGLE 4": {"SHINGLE": 4},
    "MAX_CANDIDATES 8": {"MAX_CANDIDATES": 8},
    "proposed: a dominated file is dropped (2 distinct hashes)": {"distinct": 2},
    "proposed, 1 distinct hash": {"distinct": 1},
}
SHOWN = ("as shipped", "proposed: a dominated file is dropped (2 distinct hashes)")


@contextmanager
def constants(values: dict[str, Any]) -> Iterator[None]:
    """``fingerprints``' module constants set to ``values`` for the block, then put back."""
    before = {name: getattr(fp, name) for name in values}
    for name, value in values.items():
        setattr(fp, name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            setattr(fp, name, value)


def attribute_dominant(
    text: str, indexes: Sequence[fp.FileIndex[str]], distinct: int = 2
) -> fp.Attribution[str]:
    """``fingerprints.attribute``, plus one rule: of the files it would name, a file is dropped when another
    holds every hash of the hit that it holds (on the hashes both sample) and at least ``distinct`` more.
    A licence's copyright line, or a README's package name, then tells one file from its template twins."""
    values = fp.hit_hashes(text)
    at_least = Counter({level: sum(1 for v in values if fp.level_of(v) >= level) for level in range(fp.MAX_LEVEL + 1)})
    scored: list[tuple[float, str, set[int], int]] = []
    for index in indexes:
        matched: dict[int, set[int]] = {}
        for value in values:
            for owner in index.holders(value):
                matched.setdefault(owner, set()).add(value)
        for owner, held in matched.items():
            level = index.levels[owner]
            if at_least[level] >= fp.MIN_SAMPLED and len(held) >= fp.MIN_MATCHED:
                scored.append((len(held) / at_least[level], index.keys[owner], held, level))
    scored.sort(key=lambda s: (-s[0], -len(s[2])))
    if not scored or scored[0][0] < fp.MIN_CONTAINMENT:
        return fp.Attribution(())
    close = [s for s in scored if s[0] >= scored[0][0] * fp.CANDIDATE_RATIO]

    def dominated(file: tuple[float, str, set[int], int], other: tuple[float, str, set[int], int]) -> bool:
        level = max(file[3], other[3])
        own = sum(1 for v in file[2] - other[2] if fp.level_of(v) >= level)
        more = sum(1 for v in other[2] - file[2] if fp.level_of(v) >= level)
        return own == 0 and more >= distinct

    kept = [s for s in close if not any(dominated(s, other) for other in close if other is not s)]
    if len(kept) > fp.MAX_CANDIDATES:
        return fp.Attribution((), scored[0][0])
    return fp.Attribution(tuple(s[1] for s in kept), scored[0][0])


def run() -> dict[str, Any]:
    started = time.perf_counter()
    documents, first, texts, hits = attribution.collect()
    holding = attribution.holding_files(texts, hits)
    replaced, stale = attribution.stale(first, texts, hits)
    print(f"corpus: {len(documents)} documents, {len(hits)} hits of {attribution.QUESTIONS} searches "
          f"({time.perf_counter() - started:.0f} s)", flush=True)  # fmt: skip
    results: dict[str, Any] = {
        "documents": len(documents),
        "formats": Counter(d.name.rsplit(".", 1)[-1] for d in documents),
        "hits": len(hits),
        "shared": sum(1 for h in hits if len(holding[h.memory_id]) > 1),
        "variants": {},
        "replaced": (first.name, replaced, stale),
    }
    for name, values in VARIANTS.items():
        distinct = values.get("distinct")
        with constants({k: v for k, v in values.items() if k != "distinct"}):
            figures = attribution.measure(
                texts,
                hits,
                holding,
                partial(attribute_dominant, distinct=distinct) if distinct else fp.attribute,
            )
        results["variants"][name] = figures
        print(f"{name}: {describe(figures['modes']['verbatim'])} | rewrite: {describe(figures['modes']['rewrite'])}", flush=True)
        for mode, tally in figures["modes"].items():
            for file, named, text in tally.wrong[:3]:
                print(f"    wrong ({mode}): {file} named {named}: {text!r}")
    return results


def describe(tally: attribution.Tally) -> str:
    every = attribution.percentages(tally.outcomes)
    alone = attribution.percentages(tally.outcomes - tally.shared)
    return (
        f"right {every['right']:.1f}%, candidates {every['candidates']:.1f}%, unattributed {every['unattributed']:.1f}%,"
        f" wrong {every['wrong']:.2f}%; text one file alone holds: right {alone['right']:.1f}%,"
        f" wrong {alone['wrong']:.2f}%"
    )


def rows(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The ``make bench`` rows: the corpus, each shown variant's two modes, the size and the time."""
    label = "file attribution from a hit's text"
    formats = ", ".join(f"{n} {ext}" for ext, n in sorted(results["formats"].items()))
    out = [(label, "corpus", f"{results['documents']} installed packages' READMEs and licences ({formats}), one "
            f"replaced; {results['hits']} hits of {attribution.QUESTIONS} searches over 4 KBs, {results['shared']}"
            " of them text several files hold")]  # fmt: skip
    name, replaced, stale = results["replaced"]
    out.append((label, f"the replaced file ({name})", f"{replaced} hits after the switch, {stale} with text only"
                " its first version held"))  # fmt: skip
    for name in SHOWN:
        for mode, tally in results["variants"][name]["modes"].items():
            out.append((label, f"{mode}, {name}", describe(tally)))
    shipped = results["variants"]["as shipped"]
    seconds = sorted(shipped["modes"]["rewrite"].seconds + shipped["modes"]["verbatim"].seconds)
    out.append((label, "fingerprints stored", f"{shipped['bytes_mean'] / 1024:.1f} KB a file on average (largest"
                f" {shipped['bytes_max'] / 1024:.1f} KB), {shipped['bytes_mean'] * 1000 / 1e6:.1f} MB per 1,000 files"))  # fmt: skip
    out.append((label, f"one attribute call against {shipped['files']} files",
                f"p50 {statistics.median(seconds) * 1e3:.2f} ms, p95 {seconds[int(len(seconds) * 0.95)] * 1e3:.2f} ms"))  # fmt: skip
    return out


if __name__ == "__main__":
    for row in rows(run()):
        print(" | ".join(row))

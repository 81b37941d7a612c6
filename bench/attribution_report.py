"""The attribution bench's run (``bench.attribution``): the hits collected once, then attributed with the
fingerprints' constants as shipped and with a few others (patched here, for the comparison only: among
them ``MIN_DISTINCT`` out of reach, which is the rule without its dominance step), each in verbatim and
rewrite modes.

``python -m bench.attribution_report``
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench import attribution
from memmy_kb.domain.fingerprints import prints as fp

# name -> the fingerprints' constants it changes.
VARIANTS: dict[str, dict[str, Any]] = {
    "as shipped": {},
    "no dominance step": {"MIN_DISTINCT": 10**9},
    "MIN_DISTINCT 1": {"MIN_DISTINCT": 1},
    "CANDIDATE_RATIO 0.95": {"CANDIDATE_RATIO": 0.95},
    "SHINGLE 4": {"SHINGLE": 4},
}
SHOWN = ("as shipped", "no dominance step")


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
        with constants(values):
            figures = attribution.measure(texts, hits, holding, fp.attribute)
        results["variants"][name] = figures
        print(
            f"{name}: {describe(figures['modes']['verbatim'])} | rewrite: {describe(figures['modes']['rewrite'])}",
            flush=True,
        )
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

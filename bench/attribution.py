"""Which file a search hit comes from, told from its text alone (``memmy_kb.domain.fingerprints.prints``), on a
corpus of real documents (``bench.attribution_corpus``: the installed packages' READMEs and licences as
Markdown, text, DOCX and PDF, full of near-duplicates), one of them replaced by its next version.

The ingest's side: each file's text as the ingest extracts it, fingerprinted. MemOS's side: the emulator
extracts, chunks and indexes the same files (4 KBs, one backend); questions drawn from its memories' text
are searched over all 4 KBs at once, and every hit is attributed against all files' fingerprints. The
truth is the emulator's: the file each memory came from (a file that holds the same text counts as right
too). Both modes on the same hits: the memories verbatim, and rewritten (``--memos-rewrite``).

A hit is **right** when one file is named and holds the text, **candidates** when several are named and
one of them holds it, **unattributed** when none is named, **wrong** when what is named does not hold
it. Targets: verbatim ≥ 98% right and 0 wrong; rewrite ≥ 85% right and ≤ 1% wrong.

``python -m bench.attribution``
"""

from __future__ import annotations

import random
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.attribution_corpus import Document, build
from memmy_kb.domain.fingerprints import prints as fp
from memmy_kb.domain.uploads.verification import MemorySource
from memmy_local.memos_emulator.config import EmulatorConfig
from memmy_local.memos_emulator.rewrite import rewrite
from memmy_local.memos_emulator.server import MemosEmulator
from tests.support.emulator_api import data_url, ok
from tests.support.polling import wait_until

KBS = 4
QUESTIONS = 400
LIMIT = 6  # hits a search answers (recall's default asks for about as many)
SEED = 40
KEY = "bench"
OUTCOMES = ("right", "candidates", "unattributed", "wrong")


@dataclass(frozen=True)
class Hit:
    """A search's hit: the memory, its file (the truth), its text verbatim and as served rewritten."""

    memory_id: str
    file: str
    verbatim: str
    rewritten: str


@dataclass
class Tally:
    outcomes: Counter[str] = field(default_factory=Counter)
    shared: Counter[str] = field(default_factory=Counter)  # hits whose text several files hold
    wrong: list[tuple[str, tuple[str, ...], str]] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def ingest_text(name: str, data: bytes) -> list[str]:
    """The text the ingest fingerprints (``memmy_kb.domain.fingerprints.text_extraction``): a text format's streamed
    pass decoded, a DOCX's document.xml, a PDF's pages."""
    from memmy_kb.domain.fingerprints import text_extraction

    extension = name.rsplit(".", 1)[-1]
    if extension in text_extraction.EXTRACTED:
        return list(
            text_extraction.extracted_text(MemorySource(data), extension, deadline=time.monotonic() + 60)
        )
    pieces: list[str] = []
    for _ in text_extraction.TappedSource(MemorySource(data), pieces.append).chunks():
        pass
    return pieces


def fingerprint_all(texts: Mapping[str, list[str]], limit: int = fp.MAX_HASHES) -> dict[str, fp.Fingerprints]:
    return {name: fp.fingerprint(chunks, limit) for name, chunks in texts.items()}


def _load(client: httpx.Client, documents: list[Document], first: Document) -> dict[str, str]:
    """The corpus into ``KBS`` KBs (at most 20 files an add, as MemOS takes), ``first`` in place of its
    file; then that file replaced by its next version. The emulator's file ids, to the documents' names."""
    kb_ids = [
        ok(client.post("/create/knowledgebase", json={"knowledgebase_name": f"kb{i}"}))["id"]
        for i in range(KBS)
    ]
    names: dict[str, str] = {}
    batches: dict[str, list[Document]] = {kb: [] for kb in kb_ids}
    for n, document in enumerate(documents):
        batches[kb_ids[n % KBS]].append(first if document.name == first.name else document)
    for kb_id, batch in batches.items():
        for start in range(0, len(batch), 20):
            part = batch[start : start + 20]
            files = [{"content": data_url(d.data, "application/octet-stream"), "name": d.name} for d in part]
            added = ok(
                client.post("/add/knowledgebase-file", json={"knowledgebase_id": kb_id, "file": files})
            )
            names.update({f["id"]: d.name for f, d in zip(added, part, strict=True)})
    _wait(client, list(names))
    (replaced_id,) = [i for i, name in names.items() if name == first.name]
    latest = next(d for d in documents if d.name == first.name)  # the corpus holds the latest version
    update = {"file_id": replaced_id, "file": {"name": latest.name, "content": data_url(latest.data)}}
    ok(client.post("/update/knowledgebase-file", json=update))
    _wait(client, [replaced_id])
    return names


def _wait(client: httpx.Client, file_ids: list[str]) -> None:
    def done() -> bool:
        for start in range(0, len(file_ids), 20):
            body = {"file_ids": file_ids[start : start + 20]}
            listed = ok(client.post("/get/knowledgebase-file", json=body))["file_detail_list"]
            if any(f["status"] == "running" for f in listed):
                return False
        return True

    wait_until(done, timeout=600, interval=0.5, message="the emulator to process the corpus")


_WORD = re.compile(r"[^\W\d_]{3,}")


def question_from(text: str, rng: random.Random) -> str:
    """A question from a memory's text: up to 8 of its words (3 letters or more) from a random place."""
    words = _WORD.findall(text)
    start = rng.randrange(max(1, len(words) - 8))
    return " ".join(words[start : start + 8])


def _search(emulator: MemosEmulator, names: dict[str, str], replaced: str) -> list[Hit]:
    """Every hit of ``QUESTIONS`` searches over all KBs, and of one search per memory of the ``replaced``
    file, each with its file and its two texts."""
    rng = random.Random(SEED)
    origins = emulator.store.memory_origins()
    # In a stable order (memory ids are new each run), so that every run asks the same questions.
    askable = sorted(
        (m for m, (_, text) in origins.items() if len(_WORD.findall(text)) >= 4),
        key=lambda m: (names[origins[m][0]], origins[m][1]),
    )
    asked = rng.sample(askable, min(QUESTIONS, len(askable)))
    asked += [m for m in askable if names[origins[m][0]] == replaced and m not in asked]
    hits: list[Hit] = []
    with httpx.Client(
        base_url=emulator.base_url, headers={"Authorization": f"Token {KEY}"}, timeout=30
    ) as client:
        for memory_id in asked:
            body = {
                "user_id": "kb-reader-bench",
                "query": question_from(origins[memory_id][1], rng),
                "knowledgebase_ids": ["all"],
                "memory_limit_number": LIMIT,
            }
            for item in ok(client.post("/search/memory", json=body))["memory_detail_list"]:
                file_id, text = origins[item["id"]]
                assert item["memory_value"] == text, "the emulator answers verbatim in this pass"
                # Seeded as the emulator seeds it, by a memory's identity; here one stable across runs.
                seed = f"{names[file_id]}:{text}"
                hits.append(Hit(item["id"], names[file_id], text, rewrite(text, seed)))
    return hits


def _token_line(text: str) -> str:
    return " " + " ".join(fp.tokens(text)) + " "


def holders(hit: Hit, lines: Mapping[str, str]) -> set[str]:
    """The files that hold the hit's verbatim text (its own file always)."""
    needle = _token_line(hit.verbatim)
    return {hit.file} | {name for name, line in lines.items() if needle in line}


Attribute = Callable[[str, Sequence[fp.FileIndex[str]]], fp.Attribution[str]]


def tally(
    hits: list[Hit],
    index: fp.FileIndex[str],
    holding_files: Mapping[str, set[str]],
    *,
    rewritten: bool,
    attribute: Attribute = fp.attribute,
) -> Tally:
    result = Tally()
    for hit in hits:
        started = time.perf_counter()
        found = attribute(hit.rewritten if rewritten else hit.verbatim, [index])
        result.seconds.append(time.perf_counter() - started)
        holding = holding_files[hit.memory_id]
        if not found.files:
            outcome = "unattributed"
        elif not holding & set(found.files):
            outcome = "wrong"
            result.wrong.append((hit.file, found.files, hit.verbatim[:80]))
        else:
            outcome = "right" if len(found.files) == 1 else "candidates"
        result.outcomes[outcome] += 1
        if len(holding) > 1:
            result.shared[outcome] += 1
    return result


def collect() -> tuple[list[Document], Document, dict[str, list[str]], list[Hit]]:
    """The corpus, the replaced file's first version, each file's ingest text, and the hits of the
    searches (the emulator stopped after)."""
    documents, first = build()
    texts = {d.name: ingest_text(d.name, d.data) for d in documents}
    config = EmulatorConfig(port=0, api_keys={KEY: "bench"}, processing_delay=0)
    with MemosEmulator(config) as emulator:
        with httpx.Client(
            base_url=emulator.base_url, headers={"Authorization": f"Token {KEY}"}, timeout=60
        ) as client:
            names = _load(client, documents, first)
        hits = _search(emulator, names, first.name)
    return documents, first, texts, hits


def stale(first: Document, texts: Mapping[str, list[str]], hits: list[Hit]) -> tuple[int, int]:
    """The replaced file's hits, and how many of them carry text its latest version does not hold."""
    latest = _token_line("\n".join(texts[first.name]))
    replaced = [hit for hit in hits if hit.file == first.name]
    return len(replaced), sum(1 for hit in replaced if _token_line(hit.verbatim) not in latest)


def percentages(counts: Counter[str]) -> dict[str, float]:
    total = sum(counts.values()) or 1
    return {outcome: 100 * counts[outcome] / total for outcome in OUTCOMES}


def holding_files(texts: Mapping[str, list[str]], hits: list[Hit]) -> dict[str, set[str]]:
    """Each hit memory's holders (``holders``), by memory id."""
    lines = {name: _token_line("\n".join(chunks)) for name, chunks in texts.items()}
    return {hit.memory_id: holders(hit, lines) for hit in {h.memory_id: h for h in hits}.values()}


def measure(
    texts: Mapping[str, list[str]],
    hits: list[Hit],
    holding: Mapping[str, set[str]],
    attribute: Attribute = fp.attribute,
) -> dict[str, Any]:
    """Both modes' tallies on ``hits``, with the fingerprints' size, at the module's current constants."""
    prints = fingerprint_all(texts)
    index = fp.FileIndex(prints)
    sizes = [len(p.encode()) for p in prints.values()]
    modes = {
        mode: tally(hits, index, holding, rewritten=mode == "rewrite", attribute=attribute)
        for mode in ("verbatim", "rewrite")
    }
    return {
        "modes": modes,
        "bytes_mean": statistics.fmean(sizes),
        "bytes_max": max(sizes),
        "files": len(sizes),
    }

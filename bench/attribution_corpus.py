"""The attribution bench's corpus: real documents that every machine has after ``make install``, the
installed packages' own READMEs (their metadata's long description) and licence files, written as
Markdown, text, DOCX and PDF (``tests.support.docgen`` makes the DOCX and PDF files).

The corpus is rich in near-duplicates, as real folders are: READMEs made from one template and sharing
their section names ("Installation", "Usage", "License": the mypy-boto3 family, httpx and its fork), the
BSD licence of six Pallets packages that differ only in a year, the Apache 2.0 text in a dozen packages,
the PSF licence alone and inside CPython's licence history. No GPL text comes with the installed packages;
the Pallets and PSF licences stand for the "two versions of one licence" pair.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath

# Packages pip upgrades or brings itself (not pinned by the project): their text changes from run to run.
UNPINNED = frozenset({"pip", "setuptools", "wheel"})
MIN_CHARS = 600  # shorter texts are notices and author lists, not documents
MAX_CHARS = 40_000  # a longer text is cut (at a line end): MemOS's documents are capped in tokens too
_LICENCE = re.compile(r"(?i)^(licen[cs]e|copying)")


@dataclass(frozen=True)
class Document:
    """One file of the corpus: its name (unique, with the extension that picks its format), its bytes, and
    what it was made from (``origin``)."""

    name: str
    data: bytes
    origin: str


def _packages() -> list[metadata.Distribution]:
    seen: dict[str, metadata.Distribution] = {}
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name and name not in UNPINNED:
            seen.setdefault(name, dist)
    return [seen[name] for name in sorted(seen)]


def _cut(text: str) -> str:
    text = text.replace("\r\n", "\n").strip()
    if len(text) <= MAX_CHARS:
        return text
    return text[: text.rfind("\n", 0, MAX_CHARS)].rstrip()


def sources() -> Iterator[tuple[str, str, str, str]]:
    """``(package, kind, text, markup)`` for every README and licence file worth a document, in a stable
    order; ``markup`` is ``md`` for Markdown, ``txt`` for the rest."""
    for dist in _packages():
        package = dist.metadata["Name"].lower()
        body = dist.metadata.get_payload() or " ".join(dist.metadata.get_all("Description") or [])  # type: ignore[attr-defined]
        if len(body.strip()) >= MIN_CHARS:
            markdown = "markdown" in " ".join(dist.metadata.get_all("Description-Content-Type") or [])
            yield package, "README", _cut(body), "md" if markdown else "txt"
        for file in sorted(dist.files or [], key=str):
            path = PurePosixPath(str(file))
            if ".dist-info" not in path.parts[0] or not _LICENCE.match(path.name) or "_vendor" in path.parts:
                continue
            text = Path(file.locate()).read_bytes().decode("utf-8", "replace")
            if len(text.strip()) >= MIN_CHARS:
                inside = path.parts[2:] if path.parts[1:2] == ("licenses",) else path.parts[1:]
                kind = "-".join(inside).replace(".", "-")  # unique: crates/LICENSE beside LICENSE
                yield package, kind, _cut(text), "md" if path.suffix == ".md" else "txt"


def _blocks(text: str) -> list[tuple[str | None, str]]:
    """Markdown or text as DOCX blocks: a heading (an ATX heading line) or None, and one paragraph each."""
    blocks: list[tuple[str | None, str]] = []
    heading: str | None = None
    for paragraph in re.split(r"\n\s*\n", text):
        lines = paragraph.strip().split("\n")
        if lines and re.match(r"#{1,6} ", lines[0]):
            heading = lines.pop(0).lstrip("#").strip()
        body = "\n".join(lines).strip()
        if body or heading:
            blocks.append((heading, body))
            heading = None
    return blocks


def _paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]


def _encode(text: str, extension: str) -> bytes:
    from tests.support import docgen

    if extension == "docx":
        return docgen.make_docx(_blocks(text))
    if extension == "pdf":
        return docgen.make_pdf(_paragraphs(text))
    return text.encode()


def build(every_docx: int = 5, every_pdf: int = 7) -> tuple[list[Document], Document]:
    """The corpus: each source one document, every ``every_docx``-th a DOCX and every ``every_pdf``-th a
    PDF (the others Markdown or text, as their markup), the replaced file at its latest version; and that
    file's first version (``replacement``)."""
    documents = []
    for n, (package, kind, text, markup) in enumerate(sources()):
        extension = "docx" if n % every_docx == 1 else "pdf" if n % every_pdf == 3 else markup
        name = f"{package}/{kind}.{extension}"
        documents.append(Document(name, _encode(text, extension), f"{package} {kind}"))
    if len({d.name for d in documents}) != len(documents):
        raise RuntimeError("two corpus documents share a name: the truth would be ambiguous")
    first, latest = replacement(documents)
    return [latest if d.name == latest.name else d for d in documents], first


def replacement(documents: list[Document]) -> tuple[Document, Document]:
    """The file the bench replaces: its first version (the first half of a Markdown README) and the version
    that replaces it (the README without its first section: some text gone, some new, most in both)."""
    document = next(d for d in documents if d.name.endswith("README.md") and len(d.data) > 8000)
    text = document.data.decode()
    half = text.rfind("\n#", 0, len(text) // 2)
    first_section = text.find("\n#", 1)
    first = Document(
        document.name, text[: half if half > 0 else len(text) // 2].encode(), f"{document.origin} v1"
    )
    latest = Document(document.name, text[max(first_section, 0) :].encode(), f"{document.origin} v2")
    return first, latest

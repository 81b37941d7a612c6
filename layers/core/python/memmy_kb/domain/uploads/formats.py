"""The file formats a knowledge base accepts: extensions, their content types, how a name maps to one, and
the form each reaches MemOS in (docs/memos.md: MemOS parses PDF, Word, text, Markdown, JSON and XML
itself; HTML is converted to Markdown first, reStructuredText and plain text without an extension are
sent as text)."""

from __future__ import annotations

from typing import Final

SUPPORTED_EXTENSIONS: Final = ("pdf", "docx", "doc", "txt", "json", "md", "xml", "html", "htm", "rst")
# A name without an extension (README, LICENSE, NOTES) is plain text: UTF-8 without a NUL byte.
NO_EXTENSION: Final = ""
ACCEPTED_EXTENSIONS: Final = (*SUPPORTED_EXTENSIONS, NO_EXTENSION)

# The content type each extension is stored with, and the ones a client may declare for it.
CONTENT_TYPES: Final[dict[str, str]] = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "doc": "application/msword",
    "txt": "text/plain",
    "json": "application/json",
    "md": "text/markdown",
    "xml": "application/xml",
    "html": "text/html",
    "htm": "text/html",
    "rst": "text/x-rst",
    NO_EXTENSION: "text/plain",
}
ACCEPTED_CONTENT_TYPES: Final[dict[str, frozenset[str]]] = {
    **{ext: frozenset({ctype}) for ext, ctype in CONTENT_TYPES.items()},
    # Browsers and OSes label Markdown, XML, HTML and reStructuredText in several ways.
    "md": frozenset({"text/markdown", "text/x-markdown", "text/plain"}),
    "xml": frozenset({"application/xml", "text/xml"}),
    "html": frozenset({"text/html", "application/xhtml+xml"}),
    "htm": frozenset({"text/html", "application/xhtml+xml"}),
    "rst": frozenset({"text/x-rst", "text/prs.fallenstein.rst", "text/plain"}),
}

# The formats MemOS does not parse itself, and the extension of the form it gets them in: HTML converted
# to Markdown (``memmy_kb.domain.uploads.conversion``), the others as they are, labelled plain text.
SENT_AS: Final[dict[str, str]] = {"html": "md", "htm": "md", "rst": "txt", NO_EXTENSION: "txt"}
CONVERTED: Final = frozenset({"html", "htm"})
# HTML is converted in memory, in one piece: at most this large.
MAX_CONVERTED_BYTES: Final = 5 * 1024 * 1024


def file_extension(filename: str) -> str:
    """The lower-cased extension without its dot ("" when there is none)."""
    stem, dot, extension = filename.rpartition(".")
    return extension.lower() if dot and stem else ""


def accepted_formats() -> str:
    """The accepted formats in words, for a refusal: ``.pdf, .docx, ... and plain text without an extension``."""
    return f"{', '.join('.' + e for e in SUPPORTED_EXTENSIONS)} and plain text without an extension"


def sent_extension(extension: str) -> str:
    """The extension of the form a file of ``extension`` reaches MemOS in."""
    return SENT_AS.get(extension, extension)


def sent_filename(filename: str) -> str:
    """``filename`` with the extension of the form it reaches MemOS in (``page.html`` → ``page.md``,
    ``README`` → ``README.txt``); unchanged for a format MemOS parses itself."""
    extension = file_extension(filename)
    sent = sent_extension(extension)
    if sent == extension:
        return filename
    stem = filename[: -len(extension) - 1] if extension else filename
    return f"{stem}.{sent}"

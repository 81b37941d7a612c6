"""The file formats a knowledge base accepts: extensions, their content types, and how a name maps to one."""

from __future__ import annotations

from typing import Final

SUPPORTED_EXTENSIONS: Final = ("pdf", "docx", "doc", "txt", "json", "md", "xml")

# The content type each extension is stored with, and the ones a client may declare for it.
CONTENT_TYPES: Final[dict[str, str]] = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "doc": "application/msword",
    "txt": "text/plain",
    "json": "application/json",
    "md": "text/markdown",
    "xml": "application/xml",
}
ACCEPTED_CONTENT_TYPES: Final[dict[str, frozenset[str]]] = {
    **{ext: frozenset({ctype}) for ext, ctype in CONTENT_TYPES.items()},
    # Browsers and OSes label Markdown and XML in several ways.
    "md": frozenset({"text/markdown", "text/x-markdown", "text/plain"}),
    "xml": frozenset({"application/xml", "text/xml"}),
}


def file_extension(filename: str) -> str:
    """The lower-cased extension without its dot ("" when there is none)."""
    stem, dot, extension = filename.rpartition(".")
    return extension.lower() if dot and stem else ""

"""Why an upload or file failed, as a machine code beside the English sentence the record keeps.

Records keep the sentence (``UploadRecord.reason``, written by the ingest); the code is derived from it
here, so records written before codes existed get one too, and clients word the failure in their own
language by the code (the desktop page does, in Chinese and English). A sentence not known here (one
with a number in it, like a capacity refusal, or a new one) falls back to a code by its kind, or
``other``; every reason constant of the domain has its code (``tests/unit/domain/uploads/test_reasons.py``).
"""

from __future__ import annotations

from functools import cache
from typing import Final


@cache
def _codes() -> dict[str, str]:
    # Built on the first reason to word: the sentences live with the rules that refuse (the ingest's, the
    # verification's), and a function listing files would otherwise import the whole ingest at cold start.
    from memmy_kb.domain.deletion import delete
    from memmy_kb.domain.knowledge_bases import files, sibling_names
    from memmy_kb.domain.uploads import ingest, replace_ingest, verification

    return {
        **{sentence: f"invalid_{extension}" for extension, sentence in verification.REASONS.items()},
        verification.NOT_UTF8: "not_utf8",
        verification.XML_DOCTYPE: "xml_doctype",
        verification.XML_TOO_LARGE_PART: "xml_too_large_part",
        verification.XML_TOO_DEEP: "xml_too_deep",
        verification.XML_TOO_MANY_NAMES: "xml_too_many_names",
        verification.XML_ENCODING: "xml_encoding",
        verification.XML_EXTERNAL: "xml_external",
        verification.UNSUPPORTED: "unsupported_file_type",
        verification.PDF_NO_TRAILER: "pdf_truncated",
        verification.DOC_BAD_HEADER: "doc_bad_header",
        verification.DOCX_BOMB: "docx_bomb",
        verification.DOCX_BAD_XML: "docx_bad_xml",
        ingest.KB_GONE: "kb_gone",
        delete.FOLDER_GONE: "folder_gone",
        ingest.LARGER: "larger_than_declared",
        ingest.SMALLER: "smaller_than_declared",
        ingest.SHA256_MISMATCH: "sha256_mismatch",
        ingest.MEMOS_REFUSED: "engine_refused",
        ingest.MEMOS_DOWN: "engine_unavailable",
        ingest.MEMOS_UNSUPPORTED: "engine_unsupported",
        ingest.MEMOS_TOO_LARGE: "engine_too_large",
        files.GONE_FROM_MEMOS: "engine_lost_file",
        files.MEMOS_FAILED: "engine_failed",
        files.UNCONFIRMED: "unconfirmed",
        files.VERSION_FAILED: "engine_failed_version",
        replace_ingest.FILE_GONE: "file_gone",
        replace_ingest.SUPERSEDED: "replace_superseded",
        sibling_names.NAME_TAKEN: "name_taken",
        sibling_names.NAME_RACED: "name_raced",
    }
# Capacity refusals name the KB's limits in their sentence: recognised by how they begin.
_PREFIXES: Final = (
    ("A knowledge base can hold at most", " of files;", "kb_storage_limit_reached"),
    ("A knowledge base can hold at most", " files;", "kb_file_limit_reached"),
)


def reason_code(reason: str | None) -> str | None:
    """The machine code of a failure's ``reason`` sentence; None when there is no reason."""
    if reason is None:
        return None
    code = _codes().get(reason)
    if code is not None:
        return code
    for start, inside, prefix_code in _PREFIXES:
        if reason.startswith(start) and inside in reason:
            return prefix_code
    return "other"

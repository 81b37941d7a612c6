"""What MemOS is sent for an upload: its bytes inline, or a short-lived GET URL of their verified copy; a format
MemOS does not parse as the form it does (``memmy_kb.domain.uploads.formats``). The ingest and the ingest
of a replace send the same (``memmy_kb.domain.uploads.ingest``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memmy_kb.domain.engine import FileInput
from memmy_kb.domain.knowledge_bases.naming import memos_file_name
from memmy_kb.domain.storage import verified_object_key
from memmy_kb.domain.uploads.formats import (
    CONTENT_TYPES,
    CONVERTED,
    file_extension,
    sent_extension,
    sent_filename,
)
from memmy_kb.domain.uploads.verification import MemorySource

if TYPE_CHECKING:
    from memmy_kb.domain.fingerprints.file_prints import PrintTaker
    from memmy_kb.domain.ports.uploads import UploadObjects
    from memmy_kb.domain.storage import ObjectInfo
    from memmy_kb.domain.uploads.verification import StoredSource
    from memmy_kb.records import UploadRecord


def memos_input(
    upload: UploadRecord,
    source: MemorySource | StoredSource,
    info: ObjectInfo,
    storage: UploadObjects,
    *,
    url_ttl_seconds: int,
    taker: PrintTaker,
) -> FileInput:
    """Small files inline as a data URL of the bytes verified; large ones as a short-lived GET URL.

    The URL points at a server-side copy of exactly the verified version (copied with ``IfMatch`` on
    its ETag): the presigned POST stays usable for minutes, and the client must not be able to swap
    the bytes MemOS will fetch after we looked at them.
    """
    # A format MemOS does not parse goes as the form it does (memmy_kb.domain.uploads.formats.SENT_AS): HTML
    # converted to Markdown here, reStructuredText and extension-less text named and typed as text.
    extension = file_extension(upload.filename)
    name = memos_file_name(sent_filename(upload.filename), upload.upload_id)
    if extension in CONVERTED:
        from memmy_kb.domain.uploads.conversion import html_to_markdown

        data = source.data if isinstance(source, MemorySource) else source.read_range(0, source.size)
        markdown = html_to_markdown(data.decode("utf-8"))
        taker.add(markdown)
        return FileInput.from_bytes(markdown.encode("utf-8"), name=name, mime_type=CONTENT_TYPES["md"])
    sent = sent_extension(extension)
    mime_type = upload.content_type if sent == extension else CONTENT_TYPES[sent]
    if isinstance(source, MemorySource):
        return FileInput.from_bytes(source.data, name=name, mime_type=mime_type)
    verified_key = verified_object_key(upload.kb_id, upload.upload_id)
    storage.copy(info, verified_key)
    url = storage.presign_get(verified_key, expires_in=url_ttl_seconds)
    return FileInput(content=url, name=name)

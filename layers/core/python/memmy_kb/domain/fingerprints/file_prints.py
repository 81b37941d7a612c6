"""The ingest's side of the fingerprints: take a file version's while it is ingested, keep them once it is
recorded (docs/architecture.md, "Uploads and ingest").

A ``PrintTaker`` goes along with one upload's ingest: it samples the text the verification streams (text
formats), the Markdown sent to MemOS (HTML), or, once the bytes are verified, the text read from them
(DOCX, PDF: ``memmy_kb.domain.fingerprints.text_extraction``). Its work is bounded: at most ``MAX_PRINTED_CHARS`` of
text and ``MAX_PRINT_SECONDS`` of reading and sampling; a longer text's fingerprints are its beginning's.
Nothing here fails or holds up the ingest: an extraction that raises, or a write the table refuses for now
(``StoreUnavailable``), leaves the version without fingerprints (its excerpts are then attributed to their
KB only), logged and counted (metric ``FingerprintsSkipped``); the reconciler removes whatever is left of a
file that is gone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from aws_lambda_powertools import Logger

from memmy_kb.domain.fingerprints.prints import Fingerprints, Sampler
from memmy_kb.domain.fingerprints.store import FilePrints, FingerprintStore
from memmy_kb.domain.fingerprints.text_extraction import (
    EXTRACTED,
    PIECE_CHARS,
    TAPPED,
    ExtractionStopped,
    TappedSource,
    extracted_text,
)
from memmy_kb.domain.fingerprints.zipfiles import ByteSource
from memmy_kb.domain.storage import ObjectChanged, StoreUnavailable
from memmy_kb.observability import metrics

logger = Logger(child=True)

MAX_PRINTED_CHARS: Final = 8 * 1024 * 1024
MAX_PRINT_SECONDS: Final = 15.0
SKIPPED_METRIC: Final = "FingerprintsSkipped"


class PrintTaker:
    """Samples one file version's text during its ingest; ``result`` is None when there is nothing to keep."""

    def __init__(
        self,
        *,
        max_chars: int = MAX_PRINTED_CHARS,
        max_seconds: float = MAX_PRINT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sampler = Sampler()
        self._chars_left = max_chars
        self._seconds_left = max_seconds
        self._clock = clock
        self.failed: str | None = None
        self.truncated = False

    def add(self, text: str) -> None:
        """More text, in pieces of about ``PIECE_CHARS`` cut at whitespace; never raises."""
        started = self._clock()
        try:
            for piece in _pieces(text):
                if self._chars_left <= 0 or self._clock() - started >= self._seconds_left:
                    self.truncated = True
                    return
                self._sampler.add(piece[: self._chars_left])
                self._chars_left -= len(piece)
        except Exception as err:  # the fingerprints never fail an ingest
            self.failed = f"{type(err).__name__}: {err}"
        finally:
            self._seconds_left -= self._clock() - started

    def tapped(self, source: ByteSource, extension: str) -> ByteSource:
        """``source`` as the verification should read it: tapped for its text when ``extension`` is a text
        format's (``TAPPED``), as it is otherwise."""
        return TappedSource(source, self.add) if extension in TAPPED else source

    def extract(self, source: ByteSource, extension: str) -> None:
        """The text of a verified DOCX or PDF (nothing for other formats); never raises."""
        if extension not in EXTRACTED:
            return
        try:
            for text in extracted_text(
                source, extension, deadline=self._clock() + self._seconds_left, clock=self._clock
            ):
                self.add(text)
                if self.truncated or self.failed:
                    return
        except ExtractionStopped:
            self.truncated = True
        except ObjectChanged:
            raise  # re-POSTed while read: the delivery is retried, as when the verification sees it
        except Exception as err:  # pypdf and a hostile document can raise anything
            self.failed = f"{type(err).__name__}: {err}"

    def result(self) -> Fingerprints | None:
        """The fingerprints taken, or None when the extraction failed or the text had none."""
        if self.failed is not None:
            return None
        prints = self._sampler.result()
        return prints if len(prints.hashes) else None


def _pieces(text: str) -> list[str]:
    """``text`` cut after a whitespace about every ``PIECE_CHARS`` characters (a word is never cut in two,
    unless it is longer than a piece)."""
    if len(text) <= PIECE_CHARS:
        return [text]
    pieces: list[str] = []
    start = 0
    while len(text) - start > PIECE_CHARS:
        cut = max(text.rfind(" ", start, start + PIECE_CHARS), text.rfind("\n", start, start + PIECE_CHARS))
        end = cut + 1 if cut > start else start + PIECE_CHARS
        pieces.append(text[start:end])
        start = end
    pieces.append(text[start:])
    return pieces


def keep_prints(
    store: FingerprintStore | None,
    taker: PrintTaker,
    record: tuple[str, str, int, str],
    log: dict[str, str],
) -> None:
    """Write the version's fingerprints when the taker has them, with the file's MemOS id (``record``: KB id,
    file id, version, MemOS file id); a failure is logged and counted, never raised."""
    kb_id, file_id, version, memos_file_id = record
    prints = taker.result()
    extra = {**log, "file_id": file_id, "version": version}
    if taker.failed is not None:
        logger.warning("file text not read; no fingerprints", extra={**extra, "why": taker.failed})
        metrics.add_metric(name=SKIPPED_METRIC, unit="Count", value=1)
    if store is None or prints is None:
        return
    if taker.truncated:
        logger.info("fingerprints of the text's beginning only", extra=extra)
    try:
        store.put_prints(FilePrints(kb_id, file_id, version, prints, memos_file_id))
    except StoreUnavailable as err:  # the file is recorded; its fingerprints are an extra
        logger.warning("fingerprints not written", extra={**extra, "error": type(err).__name__})
        metrics.add_metric(name=SKIPPED_METRIC, unit="Count", value=1)


def drop_prints(store: FingerprintStore | None, kb_id: str, file_id: str, versions: list[int] | None) -> bool:
    """Delete a file's fingerprints (of ``versions``, or all); False when the write failed (logged): the
    reconciler removes them later."""
    if store is None:
        return True
    try:
        store.delete_prints(kb_id, file_id, versions)
    except StoreUnavailable as err:  # never worth failing a cleanup: the reconciler sweeps them
        logger.warning("fingerprints not deleted", extra={"kb_id": kb_id, "file_id": file_id, "error": type(err).__name__})
        return False
    return True

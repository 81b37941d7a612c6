"""The emulator's processing worker: each new file is fetched if given by URL, parsed, chunked and indexed
once its processing delay is over, then marked ``completed`` (or ``failed`` with a reason).

One worker thread runs ``process_loop``; ``wake`` (after files are added) and ``stop`` notify it, and it
waits at most a second otherwise, so a stop or a clock jump is noticed. ``pause`` holds every file
(a new one, or a new version of one) where it is until ``resume``: a test can look at what answers while a
version is still processing.
"""

from __future__ import annotations

import logging
import threading
import time
from http import HTTPStatus
from ipaddress import ip_address
from urllib.parse import urlsplit

import httpx

from .chunking import chunk_sections
from .config import EmulatorConfig
from .extract import extract_sections
from .extraction import ExtractionError
from .store import EmulatorStore

log = logging.getLogger("memos_emulator")


class FileProcessor:
    """Turns the store's pending files into searchable excerpts, in one background thread."""

    def __init__(self, store: EmulatorStore, config: EmulatorConfig) -> None:
        self.store = store
        self.config = config
        self._work = threading.Condition()
        self._stopping = threading.Event()
        self._paused = threading.Event()

    @property
    def paused(self) -> bool:
        return self._paused.is_set()

    def pause(self) -> None:
        self._paused.set()

    def resume(self) -> None:
        self._paused.clear()
        self.wake()

    def wake(self) -> None:
        with self._work:
            self._work.notify_all()

    def stop(self) -> None:
        self._stopping.set()
        self.wake()

    def process_loop(self) -> None:
        while not self._stopping.is_set():
            pending, due = (None, None) if self.paused else self.store.next_pending(time.time())
            if pending is None:
                with self._work:
                    # Bounded so a stop or a clock jump is noticed; add_files notifies sooner.
                    self._work.wait(timeout=1.0 if due is None else min(1.0, max(0.0, due - time.time())))
                continue
            file = pending.file
            try:
                data = pending.content if pending.content is not None else self.fetch(pending.url or "")
                sections = extract_sections(file.name, data)
                excerpts = chunk_sections(sections)
                self.store.complete_file(file.id, [(e.title, e.text) for e in excerpts], file.version)
            except ExtractionError as err:
                self.store.fail_file(file.id, str(err), file.version)
            except Exception:
                log.exception("processing %s failed", file.id)
                self.store.fail_file(file.id, "internal processing error", file.version)

    def fetch(self, url: str) -> bytes:
        """Fetch a file by URL: loopback only (the emulator must never reach out), at most 100 MB."""
        host = urlsplit(url).hostname or ""
        try:
            loopback = host == "localhost" or ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ExtractionError("the emulator only fetches URLs on loopback")
        chunks, size = [], 0
        try:
            with httpx.stream("GET", url, timeout=self.config.fetch_timeout) as resp:
                if resp.status_code != HTTPStatus.OK:
                    raise ExtractionError(f"fetching the file failed with HTTP {resp.status_code}")
                for chunk in resp.iter_bytes():
                    size += len(chunk)
                    if size > self.config.max_file_bytes:
                        raise ExtractionError("file exceeds 100 MB")
                    chunks.append(chunk)
        except httpx.HTTPError as err:
            raise ExtractionError(f"fetching the file failed: {type(err).__name__}") from None
        return b"".join(chunks)

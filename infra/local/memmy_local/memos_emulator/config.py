"""How the MemOS emulator is set up (``EmulatorConfig``): its address, its API keys and projects, MemOS's
limits; read by the server, its endpoints and its processing worker."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_PREFIX = "/api/openmem/v1"
DEFAULT_PORT = 8090
DEFAULT_API_KEY = "local-memos-key"

MAX_FILE_BYTES = 100 * 1024 * 1024
MAX_REQUEST_FILE_BYTES = 300 * 1024 * 1024


@dataclass
class EmulatorConfig:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    prefix: str = DEFAULT_PREFIX
    # API key -> MemOS project; every KB belongs to the project of the key that created it.
    api_keys: Mapping[str, str] = field(default_factory=lambda: {DEFAULT_API_KEY: "default"})
    db_path: Path | None = None
    processing_delay: float = 1.0
    kb_quota: int | None = None
    fetch_timeout: float = 30.0
    # MemOS's documented limits; tests may lower them to exercise the checks cheaply.
    max_file_bytes: int = MAX_FILE_BYTES
    max_request_file_bytes: int = MAX_REQUEST_FILE_BYTES
    # MemOS's rate limit: searches a second per project past which a search is refused with 40309.
    search_qps: float | None = None
    # Rewrite mode: every search hit's text comes back rewritten (``rewrite.rewrite``, seeded by the
    # memory's id), as a memory system that rewrites what it stores might answer; the index is unchanged.
    rewrite: bool = False
    # File-id mode: every search hit names its file in ``metadata.file_ids``, as MemOS's open-source server
    # keeps it; the hosted MemOS documents no such field (docs/memos.md, "A hit's file").
    hit_file_ids: bool = False

    @property
    def max_body_bytes(self) -> int:
        """Base64 inflates by 4/3; a body much larger than the request limit is refused unread."""
        return self.max_request_file_bytes * 4 // 3 + 1024 * 1024

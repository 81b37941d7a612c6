"""The ports of the knowledge engine (MemOS): one backend, the pool of backends, and the KBs placed on
each."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    # Only signatures name these: a function taking a port imports no model for it.
    from memmy_kb.domain.engine import EngineBackend, EngineFile, FileInput, SearchHit


class KnowledgeEngine(Protocol):
    """MemOS, as far as the domain uses it (implemented by ``memmy_kb.adapters.memos.client.MemosClient``)."""

    def create_knowledgebase(self, name: str, description: str | None = None) -> str: ...

    def delete_knowledgebase(self, kb_id: str, *, delete_all: bool) -> None: ...

    def add_knowledgebase_files(self, kb_id: str, files: list[FileInput]) -> list[EngineFile]: ...

    # The file's next version under the same id (docs/memos.md, "Updating a file").
    def update_knowledgebase_file(self, file_id: str, file: FileInput) -> EngineFile: ...

    def get_knowledgebase_files(self, file_ids: list[str]) -> list[EngineFile]: ...

    def iter_knowledgebase_files(
        self, kb_id: str, *, page_size: int = 20, max_pages: int = 10_000
    ) -> Iterator[EngineFile]: ...

    def delete_knowledgebase_files(self, file_ids: list[str]) -> None: ...

    def search_memory(
        self, user_id: str, query: str, kb_ids: list[str], *, limit: int = 9, relativity: float | None = None
    ) -> list[SearchHit]: ...


class KnowledgeEngines(Protocol):
    """The pool of MemOS backends (projects), each with its own key and KB cap
    (implemented by ``memmy_kb.adapters.memos.backends.MemosBackends``).

    A KB lives in the backend recorded on it at create (``backend_of(record.memos_backend)``) and every
    MemOS call about it goes to ``engine(that id)``.
    """

    def backends(self) -> list[EngineBackend]:
        """The backends configured now (re-read within the secret cache's lifetime), in order."""
        ...

    def engine(self, backend_id: str) -> KnowledgeEngine:
        """The engine of one backend; ``MemosBackendUnknown`` when none has that id."""
        ...


class BackendSlots(Protocol):
    """One counter per MemOS backend of the KBs placed there, with the KBs' ids (``BACKEND#<id>``).

    ``claim`` is conditional (``used < max_kbs``), so concurrent creates never place more than
    ``max_kbs`` KBs on a backend; ``release`` frees a KB's slot once, however often it is called.
    """

    def claim_slot(self, backend_id: str, kb_id: str, *, max_kbs: int) -> bool:
        """Take a slot for ``kb_id``; False when the backend is full."""
        ...

    def release_slot(self, backend_id: str, kb_id: str) -> None: ...

    def slot_of(self, kb_id: str, backend_ids: list[str]) -> str | None:
        """The backend of ``backend_ids`` ``kb_id``'s slot was taken on (None: it holds none there)."""
        ...

    def used_slots(self, backend_ids: list[str]) -> dict[str, int]:
        """The KBs placed on each backend now (0 for a backend never used)."""
        ...

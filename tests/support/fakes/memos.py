"""MemOS in memory (``KnowledgeEngine``): knowledge bases, files with a settable status, memories searched
by KB, every call counted, failures injected per method; ``FakeEngines``, several of them as backends."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Literal

from memmy_kb.adapters.memos.client import MAX_SEARCH_LIMIT
from memmy_kb.adapters.memos.errors import family_for_code
from memmy_kb.domain.engine import (
    DEFAULT_BACKEND,
    EngineBackend,
    EngineFile,
    FileInput,
    FileStatus,
    MemosBackendUnknown,
    MemosError,
    MemosNotFound,
    SearchHit,
)
from memmy_kb.domain.ports.engines import KnowledgeEngine

EngineMethod = Literal[
    "create_knowledgebase",
    "delete_knowledgebase",
    "add_knowledgebase_files",
    "update_knowledgebase_file",
    "get_knowledgebase_files",
    "iter_knowledgebase_files",
    "delete_knowledgebase_files",
    "search_memory",
]


@dataclass
class FakeMemosKnowledgeBase:
    id: str
    name: str
    description: str | None = None
    files: dict[str, EngineFile] = field(default_factory=dict)
    memories: list[SearchHit] = field(default_factory=list)


@dataclass(frozen=True)
class SearchCall:
    user_id: str
    query: str
    kb_ids: tuple[str, ...]
    limit: int
    relativity: float | None


@dataclass
class _Failure:
    error: Exception
    times: int | None  # None: every call from now on


class FakeKnowledgeEngine:
    """``KnowledgeEngine`` (MemOS) in memory.

    ``calls`` counts every call by method, failed ones included. ``fail(method, error, times=n)`` makes
    the next ``n`` calls of ``method`` raise ``error`` (every call when ``times`` is None). Arguments are
    refused (``ValueError``) where ``MemosClient`` refuses them; unknown KBs answer ``MemosNotFound``
    where MemOS does, and deletes of unknown ids count as done, as in the client.
    """

    def __init__(self, *, max_kbs: int = 1000) -> None:
        # As a pool (``KnowledgeEngines``), this engine is the one backend ``default``, of ``max_kbs``.
        self.max_kbs = max_kbs
        self.knowledge_bases: dict[str, FakeMemosKnowledgeBase] = {}
        self.deleted_knowledge_bases: list[tuple[str, bool]] = []  # (memos_kb_id, delete_all)
        self.deleted_files: list[str] = []
        self.inputs: list[FileInput] = []  # what each add or update was given (a data URL or a GET URL, and the name)
        self.updates: list[tuple[str, FileInput]] = []  # (MemOS file id, the new version) of each update
        self.searches: list[SearchCall] = []
        self.calls: Counter[EngineMethod] = Counter()
        self._failures: dict[EngineMethod, list[_Failure]] = {}
        self._ids = itertools.count(1)
        # Per KB: searches naming one of these MemOS ids raise its error (recall searches KBs on threads).
        self.search_failures: dict[str, Exception] = {}
        # Runs with the MemOS ids of each search before it answers (a change landing during the search).
        self.during_search: Callable[[tuple[str, ...]], None] | None = None
        self._search_lock = threading.Lock()

    # -- arranging ---------------------------------------------------------------------------------

    def fail_search_of(self, kb_id: str, error: Exception) -> None:
        """Every search that names MemOS KB ``kb_id`` raises ``error`` (the others answer)."""
        self.search_failures[kb_id] = error

    def fail(self, method: EngineMethod, error: Exception, *, times: int | None = None) -> None:
        if times is not None and times < 1:
            raise ValueError("times must be at least 1 (None: every call)")
        self._failures.setdefault(method, []).append(_Failure(error, times))

    def clear_failures(self) -> None:
        self._failures.clear()

    def add_file(
        self,
        kb_id: str,
        name: str | None,
        status: FileStatus = FileStatus.PROCESSING,
        *,
        file_id: str | None = None,
    ) -> EngineFile:
        """A file as an add leaves it (without counting a call), in ``status``."""
        file = EngineFile(id=file_id or self._new_id("mf"), name=name, status=status)
        self.knowledge_bases[kb_id].files[file.id] = file
        return file

    def set_status(self, file_id: str, status: FileStatus) -> None:
        for kb in self.knowledge_bases.values():
            if file_id in kb.files:
                kb.files[file_id] = replace(kb.files[file_id], status=status)
                return
        raise KeyError(file_id)

    def add_memory(self, kb_id: str, title: str, content: str, score: float = 0.5) -> SearchHit:
        memory = SearchHit(title=title, content=content, score=score)
        self.knowledge_bases[kb_id].memories.append(memory)
        return memory

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    # -- KnowledgeEngines, as the one backend ``default`` ---------------------------------------------

    def backends(self) -> list[EngineBackend]:
        return [EngineBackend(DEFAULT_BACKEND, max_kbs=self.max_kbs)]

    def engine(self, backend_id: str) -> KnowledgeEngine:
        if backend_id != DEFAULT_BACKEND:
            raise MemosBackendUnknown(f"no MemOS backend {backend_id!r}")
        return self

    # -- KnowledgeEngine -----------------------------------------------------------------------------

    def create_knowledgebase(self, name: str, description: str | None = None) -> str:
        self._enter("create_knowledgebase")
        kb = FakeMemosKnowledgeBase(id=self._new_id("mkb"), name=name, description=description)
        self.knowledge_bases[kb.id] = kb
        return kb.id

    def delete_knowledgebase(self, kb_id: str, *, delete_all: bool) -> None:
        self._enter("delete_knowledgebase")
        self.knowledge_bases.pop(kb_id, None)
        self.deleted_knowledge_bases.append((kb_id, delete_all))

    def add_knowledgebase_files(self, kb_id: str, files: list[FileInput]) -> list[EngineFile]:
        self._enter("add_knowledgebase_files")
        if not files:
            raise ValueError("add_knowledgebase_files needs at least one file")
        self._kb(kb_id, "/add/knowledgebase-file")
        self.inputs.extend(files)
        return [self.add_file(kb_id, f.name) for f in files]

    def update_knowledgebase_file(self, file_id: str, file: FileInput) -> EngineFile:
        """The file's next version: processing again under the new name (MemOS's 40001 for a file it lacks)."""
        self._enter("update_knowledgebase_file")
        for kb in self.knowledge_bases.values():
            if file_id in kb.files:
                self.inputs.append(file)
                self.updates.append((file_id, file))
                kb.files[file_id] = replace(kb.files[file_id], name=file.name, status=FileStatus.PROCESSING)
                return kb.files[file_id]
        raise MemosNotFound("file does not exist", endpoint="/update/knowledgebase-file", code=40001)

    def get_knowledgebase_files(self, file_ids: list[str]) -> list[EngineFile]:
        self._enter("get_knowledgebase_files")
        wanted = set(file_ids)
        return [f for kb in self.knowledge_bases.values() for f in kb.files.values() if f.id in wanted]

    def iter_knowledgebase_files(
        self, kb_id: str, *, page_size: int = 20, max_pages: int = 10_000
    ) -> Iterator[EngineFile]:
        self._enter("iter_knowledgebase_files")
        files = list(self._kb(kb_id, "/get/knowledgebase-file").files.values())
        return iter(files[: page_size * max_pages])

    def delete_knowledgebase_files(self, file_ids: list[str]) -> None:
        self._enter("delete_knowledgebase_files")
        for file_id in file_ids:
            for kb in self.knowledge_bases.values():
                if kb.files.pop(file_id, None) is not None:
                    self.deleted_files.append(file_id)

    def search_memory(
        self, user_id: str, query: str, kb_ids: list[str], *, limit: int = 9, relativity: float | None = None
    ) -> list[SearchHit]:
        """The memories of exactly ``kb_ids``, best score first, at most ``limit`` (unknown ids hold none)."""
        with self._search_lock:
            self._enter("search_memory")
        if not kb_ids:
            raise ValueError("search_memory needs at least one knowledge base id")
        if any(not kb_id.strip() or kb_id.strip().lower() == "all" for kb_id in kb_ids):
            raise ValueError("search_memory takes explicit knowledge base ids only")
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_SEARCH_LIMIT}")
        if relativity is not None and not 0 <= relativity <= 1:
            raise ValueError("relativity must be between 0 and 1")
        self.searches.append(SearchCall(user_id, query, tuple(kb_ids), limit, relativity))
        if self.during_search is not None:
            self.during_search(tuple(kb_ids))
        for kb_id in kb_ids:
            if kb_id in self.search_failures:
                raise self.search_failures[kb_id]
        hits = [
            m
            for kb_id in dict.fromkeys(kb_ids)
            if kb_id in self.knowledge_bases
            for m in self.knowledge_bases[kb_id].memories
            if relativity is None or (m.score or 0) >= relativity
        ]
        hits.sort(key=lambda m: -(m.score or 0))
        return hits[:limit]

    # -- internals ---------------------------------------------------------------------------------

    def _enter(self, method: EngineMethod) -> None:
        self.calls[method] += 1
        pending = self._failures.get(method)
        if not pending:
            return
        failure = pending[0]
        if failure.times is not None:
            failure.times -= 1
            if failure.times <= 0:
                pending.pop(0)
        raise failure.error

    def _kb(self, kb_id: str, endpoint: str) -> FakeMemosKnowledgeBase:
        kb = self.knowledge_bases.get(kb_id)
        if kb is None:
            raise MemosNotFound("knowledge base does not exist", endpoint=endpoint, code=50120)
        return kb

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):04d}"


class FakeEngines:
    """``KnowledgeEngines``: several MemOS backends, a ``FakeKnowledgeEngine`` each, in the order given.

    ``FakeEngines(a=2, b=2)`` holds backends ``a`` and ``b`` of two KBs each; ``draining`` and ``max_kbs``
    change what ``backends()`` reports from then on (as an edited secret does).
    """

    def __init__(self, **max_kbs: int) -> None:
        self.engines = {backend: FakeKnowledgeEngine(max_kbs=cap) for backend, cap in max_kbs.items()}
        self.max_kbs = dict(max_kbs)
        self.draining: set[str] = set()

    def __getitem__(self, backend_id: str) -> FakeKnowledgeEngine:
        return self.engines[backend_id]

    def backends(self) -> list[EngineBackend]:
        return [
            EngineBackend(b, max_kbs=self.max_kbs[b], draining=b in self.draining) for b in self.engines
        ]

    def engine(self, backend_id: str) -> KnowledgeEngine:
        if backend_id not in self.engines:
            raise MemosBackendUnknown(f"no MemOS backend {backend_id!r}")
        return self.engines[backend_id]

    def kb_counts(self) -> dict[str, int]:
        """The MemOS KBs each backend holds now."""
        return {b: len(e.knowledge_bases) for b, e in self.engines.items()}


def memos_error(message: str = "MemOS is down", *, code: int = 50004) -> MemosError:
    """A MemOS failure of the family its envelope ``code`` maps to (``family_for_code``)."""
    return family_for_code(code)(message, endpoint="/fake", code=code)

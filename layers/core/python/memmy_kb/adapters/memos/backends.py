"""The pool of MemOS backends: one client per backend (project), chosen by the backend's id.

Implements ``memmy_kb.domain.ports.engines.KnowledgeEngines``. The backends come from the MemOS secret
(``memmy_kb.adapters.memos.key.SecretBackendsProvider``), re-read within its cache's lifetime, so a
backend added there takes KBs with no deploy. Each backend's client is built on first use by ``build``
(the composition root's, with that backend's base URL and key) and kept: an id names one project for good.
The key a client uses is its backend's, looked up again in the secret when MemOS refuses it (rotation).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from memmy_kb.domain.engine import EngineBackend, MemosBackendUnknown

if TYPE_CHECKING:
    from memmy_kb.adapters.memos.key import MemosBackendConfig
    from memmy_kb.domain.ports.engines import KnowledgeEngine

# (base URL, the backend's key provider) -> its engine
EngineFactory = Callable[[str, Callable[[bool], str]], "KnowledgeEngine"]


class MemosBackends:
    """Every configured MemOS backend, a client each."""

    def __init__(self, source: Callable[[bool], list[MemosBackendConfig]], build: EngineFactory) -> None:
        self._source = source
        self._build = build
        self._engines: dict[str, KnowledgeEngine] = {}
        # Recall's searches run on threads: one builds a backend's client, the others wait for it.
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MemosBackends(built={sorted(self._engines)})"

    def backends(self) -> list[EngineBackend]:
        return [
            EngineBackend(b.id, max_kbs=b.max_kbs, max_qps=b.max_qps, draining=b.draining)
            for b in self._source(False)
        ]

    def engine(self, backend_id: str) -> KnowledgeEngine:
        with self._lock:
            engine = self._engines.get(backend_id)
            if engine is None:
                config = self._config(backend_id, False)
                engine = self._build(
                    config.base_url, lambda refresh: self._config(backend_id, refresh).api_key
                )
                self._engines[backend_id] = engine
            return engine

    def _config(self, backend_id: str, force_refresh: bool) -> MemosBackendConfig:
        for backend in self._source(force_refresh):
            if backend.id == backend_id:
                return backend
        raise MemosBackendUnknown(f"no MemOS backend {backend_id!r} in the secret")

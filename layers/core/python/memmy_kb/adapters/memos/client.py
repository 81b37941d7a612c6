"""Typed HTTP client for the MemOS knowledge-base API (the contract we rely on: docs/memos.md).

Every MemOS call is a JSON ``POST`` answered with the envelope ``{"code", "data", "message"}``; ``code`` 0
or 200 is success and errors often arrive with HTTP 200. The envelope, HTTP statuses and transport
failures become the engine's error family (``memmy_kb.domain.engine``, chosen by code in
``memmy_kb.adapters.memos.errors``, never by message text; sent, retried and timed by
``memmy_kb.adapters.memos.transport``); this module parses replies with the models of
``memmy_kb.adapters.memos.models``, handing the domain its own file and hit types. Its methods are named
after the MemOS endpoints they call (``/search/memory`` is ``search_memory``).

This module sits on the recall path: keep its imports light (no boto3, no Powertools utilities).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from aws_lambda_powertools import Logger
from pydantic import ValidationError

from memmy_kb.adapters.memos.models import (
    FilePage,
    MemosMemory,
    file_body,
    file_update_body,
    lenient_int,
    parse_files,
)
from memmy_kb.adapters.memos.transport import MemosTransport
from memmy_kb.domain.engine import (
    EngineFile,
    FileInput,
    MemosNotFound,
    MemosUnavailable,
    SearchHit,
)

# A child logger shares the handler (and correlation id) of the function's Logger without configuring it.
logger = Logger(child=True)

MAX_SEARCH_LIMIT: Final = 25


class MemosClient(MemosTransport):
    """The MemOS knowledge-base API, one typed method per endpoint.

    Authentication: ``api_key_provider(False)`` gives the key for each call (it is expected to cache). When
    MemOS answers with an auth error the client calls ``api_key_provider(True)`` once and repeats that call
    once; a second auth error is raised as ``MemosAuthError``. This holds for create and add too: MemOS
    acted on nothing it refused for auth. Exceptions raised by the provider itself propagate unchanged.

    Retry policy (exponential backoff with full jitter: a delay drawn uniformly from
    ``[0, min(backoff_cap, backoff_base * 2 ** (attempt - 1))]``, at most ``max_attempts`` attempts):

    * ``get_knowledgebase_files``, ``list_knowledgebase_files``, ``iter_knowledgebase_files``,
      ``search_memory``, ``delete_knowledgebase_files``, ``delete_knowledgebase`` and
      ``update_knowledgebase_file`` are safe to repeat (an update repeated with the same content leaves the
      file with that content: docs/memos.md, "Updating a file"); they are retried on ``MemosUnavailable``
      (5xxxx codes, HTTP 5xx, timeouts, connection errors, unreadable replies) and ``MemosRateLimited``.
    * ``create_knowledgebase`` and ``add_knowledgebase_files`` are *not* retried once the request may have reached MemOS:
      a repeat could create a second KB (which nothing could ever find again: MemOS cannot list KBs) or a
      duplicate file. They are retried only when the connection was never established
      (``httpx.ConnectError``, ``ConnectTimeout``, ``PoolTimeout``), since then nothing was sent. Their
      callers must treat a ``MemosUnavailable`` with ``request_sent`` True as "outcome unknown".
    * Quota, rejected-input, not-found and auth errors are never retried (apart from the one auth refresh).

    A ``Retry-After`` header (seconds) lengthens the delay, still within ``backoff_cap``. Timeouts apply per
    request, also to an injected ``http`` client.
    """

    def __repr__(self) -> str:
        return f"MemosClient(base_url={self._base_url!r})"

    def close(self) -> None:
        """Close the HTTP client if this object created it."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> MemosClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- endpoints ---------------------------------------------------------------------------------

    def create_knowledgebase(self, name: str, description: str | None = None) -> str:
        """Create a KB linked to our project and return its MemOS id. Not retried once sent (see class)."""
        body: dict[str, Any] = {"knowledgebase_name": name}
        if description is not None:
            body["knowledgebase_description"] = description
        data = self._call("/create/knowledgebase", body, idempotent=False)
        kb_id: object = data
        if isinstance(data, dict):
            kb_id = data.get("id") or data.get("knowledgebase_id")
        if isinstance(kb_id, int) and not isinstance(kb_id, bool):
            kb_id = str(kb_id)
        if not isinstance(kb_id, str) or not kb_id:
            raise MemosUnavailable("reply carries no knowledge base id", endpoint="/create/knowledgebase")
        return kb_id

    def add_knowledgebase_files(self, kb_id: str, files: list[FileInput]) -> list[EngineFile]:
        """Submit files (MemOS takes up to 20 per request) and return them, usually still processing.

        Not retried once sent (see class): a repeat could store the files twice.
        """
        if not files:
            raise ValueError("add_knowledgebase_files needs at least one file")
        endpoint = "/add/knowledgebase-file"
        data = self._call(
            endpoint,
            {"knowledgebase_id": kb_id, "file": [file_body(f) for f in files]},
            idempotent=False,
        )
        added = parse_files(data, endpoint)
        if not added:
            # The files may well be stored: say so rather than let the caller believe nothing happened.
            raise MemosUnavailable("reply lists none of the added files", endpoint=endpoint)
        return [f.to_engine_file() for f in added]

    def update_knowledgebase_file(self, file_id: str, file: FileInput) -> EngineFile:
        """Submit ``file`` as the next version of MemOS file ``file_id``; the file as MemOS answers (usually
        processing again). Repeated on transient failures: the same content again is the same outcome."""
        endpoint = "/update/knowledgebase-file"
        body = {"file_id": file_id, "file": file_update_body(file)}
        updated = parse_files(self._call(endpoint, body, idempotent=True), endpoint)
        # MemOS documents no reply shape: a reply naming no file still says the version was taken.
        return updated[0].to_engine_file() if updated else EngineFile(id=file_id)

    def get_knowledgebase_files(self, file_ids: list[str]) -> list[EngineFile]:
        """The files with these ids (MemOS may leave out ids it does not know)."""
        if not file_ids:
            return []
        endpoint = "/get/knowledgebase-file"
        data = self._call(endpoint, {"file_ids": list(file_ids)}, idempotent=True)
        return [f.to_engine_file() for f in parse_files(data, endpoint)]

    def list_knowledgebase_files(self, kb_id: str, *, page: int = 1, page_size: int = 20) -> FilePage:
        """One page of a KB's files (pages count from 1), as MemOS reports them."""
        if page < 1 or page_size < 1:
            raise ValueError("page and page_size must be at least 1")
        endpoint = "/get/knowledgebase-file"
        data = self._call(
            endpoint, {"knowledgebase_id": kb_id, "page": page, "page_size": page_size}, idempotent=True
        )
        files = parse_files(data, endpoint)
        fields = data if isinstance(data, dict) else {}
        return FilePage(
            total=lenient_int(fields.get("total")),
            page=lenient_int(fields.get("page")) or page,
            page_size=lenient_int(fields.get("page_size")) or page_size,
            files=files,
        )

    def iter_knowledgebase_files(self, kb_id: str, *, page_size: int = 20, max_pages: int = 10_000) -> Iterator[EngineFile]:
        """Every file of a KB, page by page; stops when a page brings nothing new (a server ignoring
        ``page`` cannot make it loop) or after ``max_pages`` pages."""
        seen: set[str] = set()
        for page_number in range(1, max_pages + 1):
            page = self.list_knowledgebase_files(kb_id, page=page_number, page_size=page_size)
            fresh = [f for f in page.files if f.id not in seen]
            if not fresh:
                return
            seen.update(f.id for f in fresh)
            yield from (f.to_engine_file() for f in fresh)
            if not page.has_more:
                return

    def delete_knowledgebase_files(self, file_ids: list[str]) -> None:
        """Delete files; ids MemOS does not know count as deleted."""
        if not file_ids:
            return
        try:
            self._call("/delete/knowledgebase-file", {"file_ids": list(file_ids)}, idempotent=True)
        except MemosNotFound:
            return

    def delete_knowledgebase(self, kb_id: str, *, delete_all: bool) -> None:
        """Unlink the KB from our project (``delete_all`` False) or delete it with its files (True).

        A KB MemOS does not know, or no longer links to us, counts as deleted.
        """
        try:
            self._call(
                "/delete/knowledgebase",
                {"knowledgebase_id": kb_id, "delete_all": delete_all},
                idempotent=True,
            )
        except MemosNotFound:
            return

    def search_memory(
        self,
        user_id: str,
        query: str,
        kb_ids: list[str],
        *,
        limit: int = 9,
        relativity: float | None = None,
    ) -> list[SearchHit]:
        """Search exactly ``kb_ids`` and return the hits of ``memory_detail_list``.

        Refuses (``ValueError``) an empty list or an ``"all"`` entry: MemOS reads ``[]`` and ``["all"]`` as
        "no KB" and "every KB of the project", and the recall scope must always be explicit. Preference,
        tool and skill memories are never asked for.
        """
        if not kb_ids:
            raise ValueError("search_memory needs at least one knowledge base id")
        for kb_id in kb_ids:
            if not isinstance(kb_id, str) or not kb_id.strip() or kb_id.strip().lower() == "all":
                raise ValueError("search_memory takes explicit knowledge base ids only")
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_SEARCH_LIMIT}")
        if relativity is not None and not 0 <= relativity <= 1:
            raise ValueError("relativity must be between 0 and 1")
        body: dict[str, Any] = {
            "user_id": user_id,
            "query": query,
            "knowledgebase_ids": list(kb_ids),
            "memory_limit_number": limit,
            "include_preference": False,
            "include_tool_memory": False,
            "include_skill": False,
        }
        if relativity is not None:
            body["relativity"] = relativity
        endpoint = "/search/memory"
        data = self._call(endpoint, body, idempotent=True)
        if data is None:
            return []
        if not isinstance(data, dict):
            raise MemosUnavailable("search reply is not an object", endpoint=endpoint)
        items = data.get("memory_detail_list") or []
        if not isinstance(items, list):
            raise MemosUnavailable("memory_detail_list is not a list", endpoint=endpoint)
        memories = []
        for item in items:
            try:
                memories.append(MemosMemory.model_validate(item).to_search_hit())
            except ValidationError:
                logger.warning("Skipping an unreadable MemOS search item", extra={"endpoint": endpoint})
        return memories

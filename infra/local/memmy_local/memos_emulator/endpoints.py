"""The MemOS knowledge-base API's endpoints on the emulator's store, faithful in their awkward parts.

``KnowledgeBaseApi.call`` authenticates a call by its API key (the key's MemOS project), reads the JSON
body (or, for an update, a multipart form) and runs the endpoint; business errors come back inside HTTP
200 with a non-zero ``code``, shape errors with HTTP 400, auth failures with HTTP 401, all in MemOS's
``{code, data, message}`` envelope.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any

from .config import EmulatorConfig
from .params import (
    FILE_TYPES,
    MAX_FILES_PER_REQUEST,
    MAX_MEMORY_LIMIT,
    MAX_PAGE_SIZE,
    ApiError,
    FileSpec,
    int_in,
    multipart_update,
    opt,
    parse_file,
    required_str,
    str_list,
)
from .rate_limit import RATE_LIMITED, SearchRateLimit
from .rewrite import rewrite
from .store import EmulatorStore, StoredFile

log = logging.getLogger("memos_emulator")


class KnowledgeBaseApi:
    """The seven endpoints; ``files_added`` wakes the processing worker when new files (or versions) wait."""

    def __init__(self, store: EmulatorStore, config: EmulatorConfig, files_added: Callable[[], None]) -> None:
        self.store = store
        self.config = config
        self._files_added = files_added
        # MemOS's rate limit on searches (``EmulatorConfig.search_qps``; None: no limit).
        self.search_limit = SearchRateLimit(config.search_qps) if config.search_qps else None
        self._routes: dict[str, Callable[[str, dict[str, Any]], Any]] = {
            "/create/knowledgebase": self._create_kb,
            "/add/knowledgebase-file": self._add_files,
            "/update/knowledgebase-file": self._update_file,
            "/get/knowledgebase-file": self._get_files,
            "/delete/knowledgebase-file": self._delete_files,
            "/delete/knowledgebase": self._delete_kb,
            "/search/memory": self._search,
        }

    def call(self, endpoint: str, headers: Mapping[str, str], raw: bytes) -> tuple[int, dict[str, Any]]:
        """One call of ``endpoint``: authenticate, validate, run; the HTTP status and MemOS's envelope."""
        try:
            project = self._authenticate(headers)
            content_type = headers.get("content-type", "")
            body: object
            if endpoint == "/update/knowledgebase-file" and content_type.lower().startswith("multipart/form-data"):
                body = multipart_update(content_type, raw, self.config.max_file_bytes)
            else:
                try:
                    body = json.loads(raw) if raw else None
                except (UnicodeDecodeError, json.JSONDecodeError):
                    raise ApiError(40000, "request body is not valid JSON", HTTPStatus.BAD_REQUEST) from None
            if not isinstance(body, dict):
                raise ApiError(40000, "request body must be a JSON object", HTTPStatus.BAD_REQUEST)
            data = self._routes[endpoint](project, body)
        except ApiError as err:
            return err.http_status, envelope(err.code, None, err.message)
        except Exception:
            log.exception("emulator error on %s", endpoint)
            return HTTPStatus.OK, envelope(50000, None, "internal error")
        return HTTPStatus.OK, envelope(0, data, "ok")

    def _authenticate(self, headers: Mapping[str, str]) -> str:
        value = headers.get("authorization", "")
        scheme, _, key = value.partition(" ")
        if not value or scheme.lower() != "token" or not key.strip():
            raise ApiError(40100, "API key missing", HTTPStatus.UNAUTHORIZED)
        project = self.config.api_keys.get(key.strip())
        if project is None:
            raise ApiError(40132, "API key invalid or expired", HTTPStatus.UNAUTHORIZED)
        return project

    def _linked_kb(self, project: str, kb_id: str) -> None:
        kb = self.store.get_kb(kb_id)
        if kb is None:
            raise ApiError(50120, "knowledge base does not exist")
        if kb.project != project or not kb.linked:
            raise ApiError(50123, "knowledge base is not linked to this project")

    # -- endpoints -------------------------------------------------------------------------------

    def _create_kb(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        name = required_str(body, "knowledgebase_name")
        description = opt(body, "knowledgebase_description")
        if description is not None and not isinstance(description, str):
            raise ApiError(40000, "knowledgebase_description must be a string")
        quota = self.config.kb_quota
        if quota is not None and self.store.count_linked_kbs(project) >= quota:
            raise ApiError(40304, "knowledge base quota exhausted")
        return {"id": self.store.create_kb(project, name, description).id}

    def _add_files(self, project: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        kb_id = required_str(body, "knowledgebase_id")
        items = opt(body, "file")
        if items is None:
            raise ApiError(40002, "required parameter missing: file")
        if not isinstance(items, list):
            raise ApiError(40000, "file must be a list")
        if not items:
            raise ApiError(40003, "file list is empty")
        if len(items) > MAX_FILES_PER_REQUEST:
            raise ApiError(50103, f"at most {MAX_FILES_PER_REQUEST} files per request")
        self._linked_kb(project, kb_id)
        specs = [parse_file(item, self.config.max_file_bytes) for item in items]
        if sum(len(s.content) for s in specs if s.content is not None) > self.config.max_request_file_bytes:
            raise ApiError(50105, "files in one request exceed 300 MB")
        ready_at = time.time() + self.config.processing_delay
        added = [
            self.store.add_file(
                kb_id,
                name=s.name,
                type_=s.type,
                size_bytes=len(s.content) if s.content is not None else None,
                content=s.content,
                url=s.url,
                ready_at=ready_at,
            )
            for s in specs
        ]
        self._files_added()
        return [added_file(f) for f in added]

    def _update_file(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        """The file's next version, under the same id: ``running`` until processed, the previous version's
        excerpts answering searches until then (docs/memos.md, "Updating a file")."""
        file_id = required_str(body, "file_id")
        item = opt(body, "file")
        if item is None:
            raise ApiError(40002, "required parameter missing: file")
        if isinstance(item, FileSpec):  # a multipart form's part, read already
            spec = item
        elif isinstance(item, dict):
            spec = parse_file(item, self.config.max_file_bytes)
        else:
            raise ApiError(40000, "file must be an object")
        if not self.store.files_by_ids(project, [file_id]):
            raise ApiError(40001, "file does not exist")
        updated = self.store.update_file(
            file_id,
            name=spec.name,
            size_bytes=len(spec.content) if spec.content is not None else None,
            content=spec.content,
            url=spec.url,
            ready_at=time.time() + self.config.processing_delay,
        )
        self._files_added()
        return {**added_file(updated), "version": updated.version}

    def _get_files(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        file_ids = str_list(body, "file_ids")
        kb_id = opt(body, "knowledgebase_id")
        if file_ids is not None and kb_id is not None:
            raise ApiError(40000, "give either file_ids or knowledgebase_id, not both")
        if file_ids is not None:
            if not file_ids:
                raise ApiError(40003, "file_ids is empty")
            files = self.store.files_by_ids(project, file_ids)
            return {"total": len(files), "file_detail_list": [file_detail(f) for f in files]}
        if kb_id is None:
            raise ApiError(40002, "required parameter missing: file_ids or knowledgebase_id")
        kb_id = required_str(body, "knowledgebase_id")
        self._linked_kb(project, kb_id)
        type_ = opt(body, "type")
        if type_ is not None and type_ not in FILE_TYPES:
            raise ApiError(40000, "type must be document or skill")
        page = int_in(body, "page", 1, 1, 1_000_000)
        page_size = int_in(body, "page_size", 20, 1, MAX_PAGE_SIZE)
        total, files = self.store.list_files(kb_id, type_, page, page_size)
        return {
            "total": total,
            "page": page,
            "page_size": page_size,
            "file_detail_list": [file_detail(f) for f in files],
        }

    def _delete_files(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        file_ids = str_list(body, "file_ids")
        if file_ids is None:
            raise ApiError(40002, "required parameter missing: file_ids")
        if not file_ids:
            raise ApiError(40003, "file_ids is empty")
        self.store.delete_files(project, file_ids)
        return {"success": True}

    def _delete_kb(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        kb_id = required_str(body, "knowledgebase_id")
        delete_all = opt(body, "delete_all")
        if delete_all is not None and not isinstance(delete_all, bool):
            raise ApiError(40000, "delete_all must be a boolean")
        self._linked_kb(project, kb_id)
        if delete_all:
            self.store.delete_kb(kb_id)
        else:
            self.store.unlink_kb(kb_id)
        return {"success": True}

    def _search(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.search_limit is not None and not self.search_limit.admit(project):
            raise ApiError(RATE_LIMITED, "rate limited: too many requests")
        required_str(body, "user_id")
        query = required_str(body, "query")
        kb_ids = str_list(body, "knowledgebase_ids") or []
        limit = int_in(body, "memory_limit_number", 9, 1, MAX_MEMORY_LIMIT)
        relativity = opt(body, "relativity")
        if relativity is None:
            relativity = 0.45
        if (
            isinstance(relativity, bool)
            or not isinstance(relativity, int | float)
            or not 0 <= relativity <= 1
        ):
            raise ApiError(40012, "relativity must be between 0 and 1")
        if "all" in kb_ids:
            scope = self.store.linked_kb_ids(project)
        else:
            scope = list(dict.fromkeys(kb_ids))
            for kb_id in scope:
                self._linked_kb(project, kb_id)
        hits = self.store.search(scope, query, limit=limit, relativity=float(relativity))
        return {
            "memory_detail_list": [
                {
                    **({"metadata": {"file_ids": [hit.file_id]}} if self.config.hit_file_ids else {}),
                    "id": hit.memory_id,
                    "memory_key": hit.title,
                    "memory_value": rewrite(hit.text, hit.memory_id) if self.config.rewrite else hit.text,
                    "memory_type": "LongTermMemory",
                    "create_time": hit.created_at,
                    "update_time": hit.created_at,
                    "conversation_id": "default_session",
                    "status": "activated",
                    "confidence": 0.99,
                    "tags": ["multimodal:file"],
                    "relativity": hit.relativity,
                }
                for hit in hits
            ],
            "preference_detail_list": [],
            "tool_memory_detail_list": [],
            "skill_detail_list": [],
            "preference_note": "",
        }


def added_file(f: StoredFile) -> dict[str, Any]:
    """A file as the add (and the update) answers it."""
    return {
        "id": f.id,
        "type": f.type,
        "name": f.name,
        "sizeMB": round((f.size_bytes or 0) / (1024 * 1024), 4),
        "status": f.status,
    }


def file_detail(f: StoredFile) -> dict[str, Any]:
    detail = {
        "id": f.id,
        "type": f.type,
        "name": f.name,
        "size": str(f.size_bytes) if f.size_bytes is not None else None,
        "status": f.status,
        "create_time": f.created_at,
        "update_time": f.updated_at,
    }
    if f.reason:
        detail["fail_reason"] = f.reason
    return detail


def envelope(code: int, data: Any, message: str) -> dict[str, Any]:
    return {"code": code, "data": data, "message": message}


def code_for_status(status: int) -> int:
    return {400: 40000, 401: 40130, 403: 40132, 429: 40309}.get(status, 50000)

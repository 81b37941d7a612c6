"""A small SDK for the Memmy knowledge-base API (the contract in docs/openapi.json): one method per route,
each returning its reply as the ``replies`` type of the route's response schema."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast
from urllib.parse import quote, urlencode

import httpx

from memmy_kb_client.api_error import (
    MemmyApiError as MemmyApiError,  # the SDK's error, where callers import it
)
from memmy_kb_client.connection_sdk import ConnectionMethods
from memmy_kb_client.http_client import OK, HttpClient, classify
from memmy_kb_client.replies import (
    CleanupAccepted,
    File,
    FileListing,
    Folder,
    KnowledgeBase,
    KnowledgeBaseList,
    Me,
    Member,
    MemberList,
    RecallResponse,
    ReplacementAnswer,
    UploadTicket,
    issued,
)
from memmy_kb_client.storage_post import file_sha256, post_upload
from memmy_kb_client.team_sdk import TeamMethods

DEFAULT_ENDPOINT = "http://127.0.0.1:8080"


# A JSON object as the API answers it, before the route's reply type is put on it.
JsonObject = dict[str, Any]


def config_home() -> Path:
    return Path(os.environ.get("MEMMY_KB_HOME") or Path.home() / ".memmy-kb")


@dataclass(frozen=True)
class ClientConfig:
    endpoint: str
    token: str | None

    @classmethod
    def load(cls, endpoint: str | None = None, token: str | None = None) -> ClientConfig:
        """Flags first, then MEMMY_KB_ENDPOINT / MEMMY_KB_TOKEN, then ``memmy-kb login``'s saved file."""
        saved: dict[str, Any] = {}
        path = config_home() / "config.json"
        if path.exists():
            saved = json.loads(path.read_text(encoding="utf-8"))
        return cls(
            endpoint=(
                endpoint or os.environ.get("MEMMY_KB_ENDPOINT") or saved.get("endpoint") or DEFAULT_ENDPOINT
            ).rstrip("/"),
            token=token or os.environ.get("MEMMY_KB_TOKEN") or saved.get("token"),
        )

    def save(self) -> Path:
        home = config_home()
        home.mkdir(parents=True, exist_ok=True)
        path = home / "config.json"
        path.touch(mode=0o600, exist_ok=True)
        path.chmod(0o600)
        path.write_text(json.dumps({"endpoint": self.endpoint, "token": self.token}), encoding="utf-8")
        return path


def token_subject(token: str) -> str | None:
    """The ``sub`` of one's own login token, read without verifying it (the service verifies)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return None
    return claims.get("sub") if isinstance(claims, dict) else None


def _segment(value: str) -> str:
    """One path parameter, percent-encoded whole: a ``/``, ``?``, ``#``, ``|`` or space in an id stays in it."""
    return quote(value, safe="")


class Login(Protocol):
    """Whose token each request carries: a saved one, or the desktop service's login (refreshed when due)."""

    def bearer(self) -> str | None:
        """The token to send now (None: none)."""

    def refused(self, token: str) -> None:
        """The cloud answered 401 to ``token``."""


@dataclass(frozen=True)
class _SavedLogin:
    token: str | None

    def bearer(self) -> str | None:
        return self.token

    def refused(self, token: str) -> None:
        pass


class MemmyClient(TeamMethods, ConnectionMethods):
    """One method per route (the team routes': ``team_sdk``; the connected apps': ``connection_sdk``);
    raises MemmyApiError for every non-2xx answer."""

    def __init__(
        self,
        config: ClientConfig,
        *,
        timeout: float = 30.0,
        http: HttpClient | None = None,
        login: Login | None = None,
    ) -> None:
        self._login = login or _SavedLogin(config.token)
        self._http = http or HttpClient(config.endpoint, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemmyClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
    ) -> JsonObject:
        """The JSON answer; ``MemmyApiError`` for any other status (or a 2xx that is not JSON), ``OSError``
        when the service did not answer."""
        target = f"{path}?{urlencode(params)}" if params else path
        token = self._login.bearer()
        sent = {"Authorization": f"Bearer {token}"} if token else {}
        reply = self._http.send_json(method, target, json_body=json, headers={**sent, **(headers or {})})
        if reply.status == 401 and token:
            self._login.refused(token)
        result = classify(reply.status, reply.data, reason=reply.reason)
        if result.outcome == OK:
            return cast(JsonObject, result.answer) if isinstance(result.answer, dict) else {}
        if result.error is not None:
            raise MemmyApiError(
                result.error.status, result.error.code, result.error.message, result.error.details
            )
        raise MemmyApiError(reply.status, result.outcome, "the service's answer is not JSON")

    def me(self) -> Me:
        return cast(Me, self._request("PUT", "/me"))

    def create_knowledge_base(self, name: str, *, idempotency_key: str | None = None) -> KnowledgeBase:
        key = idempotency_key or str(uuid.uuid4())
        answer = self._request(
            "POST", "/knowledge-bases", json={"name": name}, headers={"Idempotency-Key": key}
        )
        return cast(KnowledgeBase, answer)

    def list_knowledge_bases(self) -> list[KnowledgeBase]:
        return cast(KnowledgeBaseList, self._request("GET", "/knowledge-bases"))["items"]

    def get_knowledge_base(self, kb_id: str) -> KnowledgeBase:
        return cast(KnowledgeBase, self._request("GET", f"/knowledge-bases/{_segment(kb_id)}"))

    def rename_knowledge_base(self, kb_id: str, name: str) -> KnowledgeBase:
        path = f"/knowledge-bases/{_segment(kb_id)}"
        return cast(KnowledgeBase, self._request("PATCH", path, json={"name": name}))

    def set_recall(self, kb_id: str, enabled: bool) -> KnowledgeBase:
        path = f"/knowledge-bases/{_segment(kb_id)}/recall"
        return cast(KnowledgeBase, self._request("PUT", path, json={"enabled": enabled}))

    def list_members(self, kb_id: str) -> list[Member]:
        return cast(MemberList, self._request("GET", f"/knowledge-bases/{_segment(kb_id)}/members"))["items"]

    def share(self, kb_id: str, identifier: str) -> Member:
        path = f"/knowledge-bases/{_segment(kb_id)}/members"
        return cast(Member, self._request("POST", path, json={"identifier": identifier}))

    def recall(self, query: str, limit: int | None = None) -> RecallResponse:
        """Excerpts of your recall scope for ``query``: ``{items, context, scope_size, discarded}``."""
        body: dict[str, Any] = {"query": query}
        if limit is not None:
            body["limit"] = limit
        return cast(RecallResponse, self._request("POST", "/recall", json=body))

    def list_files(self, kb_id: str, folder_id: str | None = None) -> FileListing:
        params = {"folder_id": folder_id} if folder_id else None
        path = f"/knowledge-bases/{_segment(kb_id)}/files"
        return cast(FileListing, self._request("GET", path, params=params))

    def create_folder(self, kb_id: str, name: str, parent_id: str | None = None) -> Folder:
        path = f"/knowledge-bases/{_segment(kb_id)}/folders"
        return cast(Folder, self._request("POST", path, json={"name": name, "parent_id": parent_id}))

    def update_folder(self, kb_id: str, folder_id: str, **changes: Any) -> Folder:
        """``name=...`` and/or ``parent_id=...`` (None moves the folder to the root)."""
        path = f"/knowledge-bases/{_segment(kb_id)}/folders/{_segment(folder_id)}"
        return cast(Folder, self._request("PATCH", path, json=changes))

    def move_file(self, kb_id: str, file_id: str, folder_id: str | None) -> File:
        path = f"/knowledge-bases/{_segment(kb_id)}/files/{_segment(file_id)}"
        return cast(File, self._request("PATCH", path, json={"folder_id": folder_id}))

    def request_upload(
        self,
        kb_id: str,
        filename: str,
        size_bytes: int,
        *,
        folder_id: str | None = None,
        idempotency_key: str | None = None,
        sha256: str | None = None,
        origin: str | None = None,
    ) -> UploadTicket:
        """A presigned POST for one file. ``sha256``: the bytes' hash (others are rejected, and the file
        records it); ``origin`` ``sync``: the upload is a folder sync's (docs/sync.md)."""
        body: dict[str, Any] = {"filename": filename, "size_bytes": size_bytes}
        if folder_id:
            body["folder_id"] = folder_id
        if sha256 is not None:
            body["sha256"] = sha256
        if origin is not None:
            body["origin"] = origin
        headers = {"Idempotency-Key": idempotency_key or str(uuid.uuid4())}
        path = f"/knowledge-bases/{_segment(kb_id)}/uploads"
        return cast(UploadTicket, self._request("POST", path, json=body, headers=headers))

    def upload_file(
        self,
        kb_id: str,
        path: Path,
        *,
        folder_id: str | None = None,
        progress: Callable[[int, int], None] | None = None,
        name: str | None = None,
    ) -> UploadTicket:
        """Upload one file: a presigned POST from the service, then the bytes straight to storage.

        The bytes never pass through the API; ``progress(sent, total)`` is called as they go. ``name``:
        the file's name in the KB (default: the path's own).
        """
        size = path.stat().st_size
        ticket = self.request_upload(kb_id, name or path.name, size, folder_id=folder_id)
        post_upload(ticket, path, progress, size)
        return ticket

    def get_file(self, kb_id: str, file_id: str) -> File:
        """One file: its version, ``sha256``, live status and any ``replacement`` in flight or failed."""
        path = f"/knowledge-bases/{_segment(kb_id)}/files/{_segment(file_id)}"
        return cast(File, self._request("GET", path))

    def request_replacement(
        self,
        kb_id: str,
        file_id: str,
        size_bytes: int,
        *,
        sha256: str | None = None,
        if_version: int | None = None,
        idempotency_key: str | None = None,
    ) -> ReplacementAnswer:
        """Ask to replace a file's content: a ticket (``status`` ``issued``) or ``status`` ``unchanged``."""
        body: dict[str, Any] = {"size_bytes": size_bytes}
        if sha256 is not None:
            body["sha256"] = sha256
        if if_version is not None:
            body["if_version"] = if_version
        headers = {"Idempotency-Key": idempotency_key or str(uuid.uuid4())}
        path = f"/knowledge-bases/{_segment(kb_id)}/files/{_segment(file_id)}/replacements"
        return cast(ReplacementAnswer, self._request("POST", path, json=body, headers=headers))

    def replace_file(
        self,
        kb_id: str,
        file_id: str,
        path: Path,
        *,
        if_version: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> ReplacementAnswer:
        """Replace a file's content with ``path``'s bytes, in place (same id, name, folder and sharing).

        The bytes' SHA-256 is computed here first: when it is the current version's the service answers
        ``status`` ``unchanged`` and nothing is sent. Otherwise the bytes go straight to storage, as an
        upload's do, and the ticket (``status`` ``issued``, ``replaces_version``) is returned; the file
        takes its next version once they are checked and handed to MemOS. 409 ``version_conflict`` when
        ``if_version`` is not the file's version, ``replace_in_progress`` while another replace runs.

        Bytes that do not reach storage (refused, the connection lost, the file unreadable) leave the
        replace pending, holding the file until its POST expires: it is dismissed (best effort) before the
        error is raised, so that a retry can start at once.
        """
        size = path.stat().st_size
        digest = file_sha256(path)
        answer = self.request_replacement(kb_id, file_id, size, sha256=digest, if_version=if_version)
        if issued(answer):
            try:
                post_upload(answer, path, progress, size)
            except (MemmyApiError, httpx.HTTPError, OSError):
                with contextlib.suppress(MemmyApiError, httpx.HTTPError, OSError):
                    self.dismiss_upload(kb_id, answer["upload_id"])
                raise
        return answer

    def dismiss_upload(self, kb_id: str, upload_id: str) -> None:
        """Remove a failed upload from the listing, or a replace not yet sent on (its file can be replaced
        again at once); owner only; one already gone is fine (409 ``upload_not_failed`` while it is in
        progress or once it became a file)."""
        self._request("DELETE", f"/knowledge-bases/{_segment(kb_id)}/uploads/{_segment(upload_id)}")

    def remove_member(self, kb_id: str, user_id: str) -> None:
        self._request("DELETE", f"/knowledge-bases/{_segment(kb_id)}/members/{_segment(user_id)}")

    def delete_knowledge_base(self, kb_id: str) -> str:
        """Delete a KB for everyone (owner only); its data leaves MemOS and storage in the background.

        Returns the cleanup id (the service answers 202 ``{"cleanup_id"}``).
        """
        return _cleanup_id(self._request("DELETE", f"/knowledge-bases/{_segment(kb_id)}"))

    def delete_file(self, kb_id: str, file_id: str) -> str:
        """Delete one file (owner only); returns the cleanup id."""
        path = f"/knowledge-bases/{_segment(kb_id)}/files/{_segment(file_id)}"
        return _cleanup_id(self._request("DELETE", path))

    def delete_folder(self, kb_id: str, folder_id: str) -> str:
        """Delete a folder with all its subfolders and files (owner only); returns the cleanup id."""
        path = f"/knowledge-bases/{_segment(kb_id)}/folders/{_segment(folder_id)}"
        return _cleanup_id(self._request("DELETE", path))


def _cleanup_id(answer: JsonObject) -> str:
    """A delete's 202 answer (``CleanupAccepted``): the id of the cleanup it started."""
    return str(cast(CleanupAccepted, answer)["cleanup_id"])

"""A fake cloud for the CLI's unit tests: one owner's knowledge base with nested folders and files,
answered through ``mock_http`` as the service answers (202 ``{cleanup_id}`` for a delete, 403
``owner_only`` for a reader, the 404s, a file read by id, moves and renames, an upload's ticket, a replace
of unchanged bytes, and the KB listing with ``other_kbs`` beside this one), every request recorded
with its raw path, so a test sees exactly what went over the wire and what did not."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import httpx

from memmy_kb_client.sdk import ClientConfig, MemmyClient
from tests.support.mock_http import mock_http

OWNER, READER = "owner-token", "reader-token"
# Ids a client must percent-encode: a pipe and a space (as login providers' ids have), a slash, ? and #.
KB_ID = "kb|1 产品"
FOLDER_ID = "fo|2 a/b"
SUB_FOLDER_ID = "fo 3?x"
FILE_ID = "fi|4 #c"
DEEP_FILE_ID = "fi 5"


class Opened:
    """``client_for``'s answer for a test: a context manager around the client (any fake with its calls)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def __enter__(self) -> Any:
        return self.client

    def __exit__(self, *exc: object) -> None:
        return None


def error(status: int, code: str, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message}})


@dataclass
class FakeService:
    """One KB named 产品资料 owned by OWNER and shared with READER:

    root: folder 资料 (FOLDER_ID) with a subfolder 旧版 (SUB_FOLDER_ID) holding 旧手册.pdf (DEEP_FILE_ID);
    root: 介绍.md (FILE_ID).
    """

    kb_name: str = "产品资料"
    folders: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            FOLDER_ID: {"id": FOLDER_ID, "name": "资料", "parent_id": None},
            SUB_FOLDER_ID: {"id": SUB_FOLDER_ID, "name": "旧版", "parent_id": FOLDER_ID},
        }
    )
    files: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            FILE_ID: {"id": FILE_ID, "name": "介绍.md", "folder_id": None, "status": "available"},
            DEEP_FILE_ID: {
                "id": DEEP_FILE_ID,
                "name": "旧手册.pdf",
                "folder_id": SUB_FOLDER_ID,
                "status": "available",
            },
        }
    )
    listing_failure: httpx.Response | None = None
    # The answer to an upload request instead of its ticket (a 409 ``name_taken``, say).
    upload_refusal: httpx.Response | None = None
    # More KBs in the listing (``kb ls``): each {"id", "name", "role"}.
    other_kbs: list[dict[str, Any]] = field(default_factory=list)
    requests: list[httpx.Request] = field(default_factory=list)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if token not in (OWNER, READER):
            return error(401, "unauthorized", "Unauthorized")
        raw = request.url.raw_path.decode("ascii").partition("?")[0]
        parts = [unquote(part) for part in raw.split("/")[1:]]
        if parts == ["knowledge-bases"] and request.method == "GET":
            role = "owner" if token == OWNER else "reader"
            kb = {"id": KB_ID, "name": self.kb_name, "role": role, "recall": True}
            return httpx.Response(200, json={"items": [kb, *self.other_kbs]})
        if parts[0] != "knowledge-bases" or len(parts) < 2:
            return error(404, "route_not_found", "No such route.")
        if parts[1] != KB_ID:
            return error(404, "kb_not_found", "Knowledge base not found.")
        role = "owner" if token == OWNER else "reader"
        if request.method == "GET":
            return self._read(request, parts[2:], role)
        if role != "owner":
            return error(403, "owner_only", "Only the knowledge base's owner may do this.")
        body = json.loads(request.content) if request.content else {}
        match request.method, parts[2:]:
            case "DELETE", []:
                return httpx.Response(202, json={"cleanup_id": "cleanup-kb"})
            case "PATCH", []:
                self.kb_name = body["name"]
                return httpx.Response(200, json={"id": KB_ID, "name": self.kb_name, "role": role, "recall": True})
            case "DELETE", ["files", file_id] if file_id in self.files:
                return httpx.Response(202, json={"cleanup_id": "cleanup-file"})
            case "DELETE", ["folders", folder_id] if folder_id in self.folders:
                return httpx.Response(202, json={"cleanup_id": "cleanup-folder"})
            case "PATCH", ["files", file_id] if file_id in self.files:
                if body["folder_id"] is not None and body["folder_id"] not in self.folders:
                    return error(404, "folder_not_found", "Folder not found.")
                self.files[file_id]["folder_id"] = body["folder_id"]
                return httpx.Response(200, json=self.files[file_id])
            case "PATCH", ["folders", folder_id] if folder_id in self.folders:
                self.folders[folder_id].update(body)
                return httpx.Response(200, json=self.folders[folder_id])
            case "POST", ["uploads"] if self.upload_refusal is not None:
                return self.upload_refusal
            case "POST", ["uploads"]:
                ticket = {
                    "upload_id": f"up_{len(self.requests)}",
                    "url": "http://storage.test/b",
                    "fields": {},
                }
                return httpx.Response(201, json=ticket)
            case "POST", ["files", file_id, "replacements"] if file_id in self.files:
                return httpx.Response(200, json={"status": "unchanged", "file_id": file_id, "version": 1})
            case "POST", ["folders"]:
                folder = {
                    "id": f"fo_new{len(self.folders)}",
                    "name": body["name"],
                    "parent_id": body["parent_id"],
                }
                self.folders[folder["id"]] = folder
                return httpx.Response(201, json=folder)
            case _, ["files", _]:
                return error(404, "file_not_found", "File not found.")
            case _, ["folders", _]:
                return error(404, "folder_not_found", "Folder not found.")
        return error(404, "route_not_found", "No such route.")

    def _read(self, request: httpx.Request, rest: list[str], role: str) -> httpx.Response:
        match rest:
            case []:
                kb = {"id": KB_ID, "name": self.kb_name, "role": role, "recall": True}
                return httpx.Response(200, json=kb)
            case ["files"]:
                if self.listing_failure is not None:
                    return self.listing_failure
                folder = request.url.params.get("folder_id")
                return httpx.Response(
                    200,
                    json={
                        "folders": [f for f in self.folders.values() if f["parent_id"] == folder],
                        "files": [f for f in self.files.values() if f["folder_id"] == folder],
                    },
                )
            case ["files", file_id] if file_id in self.files:
                return httpx.Response(200, json=self.files[file_id])
            case ["files", _]:
                return error(404, "file_not_found", "File not found.")
        return error(404, "route_not_found", "No such route.")

    @property
    def listings(self) -> int:
        return sum(1 for r in self.requests if r.method == "GET" and r.url.path.endswith("/files"))

    def client(self, token: str = OWNER) -> MemmyClient:
        http = mock_http(self.handle, "http://memmy.test")
        return MemmyClient(ClientConfig(endpoint="http://memmy.test", token=token), http=http)

    @property
    def deletes(self) -> list[str]:
        return [r.url.raw_path.decode() for r in self.requests if r.method == "DELETE"]

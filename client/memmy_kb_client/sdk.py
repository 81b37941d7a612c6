"""A small SDK for the Memmy knowledge-base API (the contract in shared/API.md)."""

from __future__ import annotations

import base64
import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

DEFAULT_ENDPOINT = "http://127.0.0.1:8080"


class MemmyApiError(Exception):
    """A non-2xx answer, carrying the service's error code and message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{message} ({status} {code})")
        self.status = status
        self.code = code
        self.message = message


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


class MemmyClient:
    """One method per route; raises MemmyApiError for every non-2xx answer."""

    def __init__(
        self, config: ClientConfig, *, timeout: float = 30.0, http: httpx.Client | None = None
    ) -> None:
        headers = {"Authorization": f"Bearer {config.token}"} if config.token else {}
        self._http = http or httpx.Client(base_url=config.endpoint, headers=headers, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemmyClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        resp = self._http.request(method, path, **kwargs)
        if resp.is_success:
            return resp.json() if resp.content else None
        try:
            error = resp.json().get("error") or {}
        except ValueError:
            error = {}
        message = (
            error.get("message") or resp.json().get("message", resp.reason_phrase)
            if resp.content
            else resp.reason_phrase
        )
        raise MemmyApiError(resp.status_code, error.get("code") or "http_error", str(message))

    def me(self) -> dict[str, Any]:
        return self._request("PUT", "/me")

    def create_knowledge_base(self, name: str, *, idempotency_key: str | None = None) -> dict[str, Any]:
        key = idempotency_key or str(uuid.uuid4())
        return self._request(
            "POST", "/knowledge-bases", json={"name": name}, headers={"Idempotency-Key": key}
        )

    def list_knowledge_bases(self) -> list[dict[str, Any]]:
        return self._request("GET", "/knowledge-bases")["items"]

    def get_knowledge_base(self, kb_id: str) -> dict[str, Any]:
        return self._request("GET", f"/knowledge-bases/{kb_id}")

    def rename_knowledge_base(self, kb_id: str, name: str) -> dict[str, Any]:
        return self._request("PATCH", f"/knowledge-bases/{kb_id}", json={"name": name})

    def set_recall(self, kb_id: str, enabled: bool) -> dict[str, Any]:
        return self._request("PUT", f"/knowledge-bases/{kb_id}/recall", json={"enabled": enabled})

    def list_members(self, kb_id: str) -> list[dict[str, Any]]:
        return self._request("GET", f"/knowledge-bases/{kb_id}/members")["items"]

    def share(self, kb_id: str, identifier: str) -> dict[str, Any]:
        return self._request("POST", f"/knowledge-bases/{kb_id}/members", json={"identifier": identifier})

    def remove_member(self, kb_id: str, user_id: str) -> None:
        self._request("DELETE", f"/knowledge-bases/{kb_id}/members/{quote(user_id, safe='')}")

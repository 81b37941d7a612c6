"""MemOS over ``httpx.MockTransport``, for ``MemosClient``'s tests: ``harness(*replies)`` builds a client
whose MemOS (``FakeMemos``) plays the replies in order and records each request, whose key provider
hands out ``API_KEY`` then ``NEW_API_KEY`` once asked to refresh, and whose sleeps are recorded, not
slept; ``envelope``, ``memos_error``, ``file_item`` and ``memory_item`` shape MemOS's replies."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import httpx

from memmy_kb.adapters.memos.client import MemosClient

BASE_URL = "https://memos.example.test/api/openmem/v1"
API_KEY = "mpg-secret-key-0123456789"
NEW_API_KEY = "mpg-rotated-key-9876543210"
KB_ID = "kb0123456789abcdef0123456789abcd"
FILE_ID = "f0123456789abcdef0123456789abcde"

Reply = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


def envelope(
    data: Any = None, *, code: int = 0, message: str = "ok", status: int = HTTPStatus.OK
) -> httpx.Response:
    return httpx.Response(status, json={"code": code, "data": data, "message": message})


def memos_error(code: int, *, status: int = HTTPStatus.OK, message: str = "failed") -> httpx.Response:
    return httpx.Response(status, json={"code": code, "data": None, "message": message})


class FakeMemos:
    """A MockTransport handler that records requests and plays replies in order (the last one repeats)."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            return reply(request)
        return reply

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]


class KeyProvider:
    """Hands out API_KEY, then NEW_API_KEY once asked to refresh; records every call."""

    def __init__(self) -> None:
        self.calls: list[bool] = []

    def __call__(self, force_refresh: bool) -> str:
        self.calls.append(force_refresh)
        return NEW_API_KEY if any(self.calls) else API_KEY


class FixedRandom(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


class Harness:
    def __init__(self, *replies: Reply, **client_kwargs: Any) -> None:
        self.memos = FakeMemos(*replies)
        self.keys = KeyProvider()
        self.sleeps: list[float] = []
        client_kwargs.setdefault("rng", random.Random(7))
        self.client = MemosClient(
            BASE_URL,
            self.keys,
            http=httpx.Client(transport=httpx.MockTransport(self.memos)),
            sleep=self.sleeps.append,
            **client_kwargs,
        )


def harness(*replies: Reply, **client_kwargs: Any) -> Harness:
    return Harness(*replies, **client_kwargs)


def file_item(status: str = "running", **extra: Any) -> dict[str, Any]:
    return {"id": FILE_ID, "type": "document", "name": "notes.md", "sizeMB": 0.01, "status": status, **extra}


def memory_item(**extra: Any) -> dict[str, Any]:
    return {
        "id": "m1",
        "memory_key": "季度报告",
        "memory_value": "营收增长了百分之十。",
        "memory_type": "LongTermMemory",
        "create_time": 1_735_689_600_000,
        "update_time": "2025-01-01T00:00:00Z",
        "conversation_id": "default_session",
        "status": "activated",
        "confidence": 0.99,
        "tags": ["multimodal:file"],
        "relativity": 0.87,
        **extra,
    }

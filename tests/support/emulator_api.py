"""The MemOS emulator's API called over raw HTTP, for its wire tests: ``api`` (a test's fixture, on
``api_client``) posts a body to an endpoint; ``ok`` reads a success envelope's ``data``, ``code_of`` any envelope's code; the
others create a KB, add a Markdown file, wait for files to finish and search."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http import HTTPStatus
from typing import Any

import httpx

from tests.support.polling import wait_until

Api = Callable[..., httpx.Response]
"""``api(endpoint, body, **httpx_options)``: the response to a POST of ``body`` as JSON."""


@contextmanager
def api_client(base_url: str, api_key: str) -> Iterator[Api]:
    """``Api`` on the emulator at ``base_url`` with the project key ``api_key``; its connection closed after."""
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Token {api_key}"}, timeout=30) as client:
        yield lambda endpoint, body, **kwargs: client.post(endpoint, json=body, **kwargs)


def data_url(data: bytes, mime: str = "text/markdown") -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode()


def ok(resp: httpx.Response) -> Any:
    assert resp.status_code == HTTPStatus.OK, resp.text
    body = resp.json()
    assert body["code"] == 0, body
    return body["data"]


def code_of(resp: httpx.Response) -> int:
    code: int = resp.json()["code"]
    return code


def create_kb(api: Api, name: str = "kb") -> str:
    kb_id: str = ok(api("/create/knowledgebase", {"knowledgebase_name": name}))["id"]
    return kb_id


def add_md(api: Api, kb_id: str, name: str, text: str) -> str:
    files = ok(
        api(
            "/add/knowledgebase-file",
            {"knowledgebase_id": kb_id, "file": [{"content": data_url(text.encode()), "name": name}]},
        )
    )
    file_id: str = files[0]["id"]
    return file_id


def wait_done(api: Api, file_ids: list[str], timeout: float = 20) -> list[dict[str, Any]]:
    def done() -> list[dict[str, Any]] | None:
        files: list[dict[str, Any]] = ok(api("/get/knowledgebase-file", {"file_ids": file_ids}))[
            "file_detail_list"
        ]
        return files if all(f["status"] != "running" for f in files) else None

    return wait_until(done, timeout=timeout, interval=0.02, message=f"the emulator to finish {file_ids}")


def search(api: Api, kb_ids: list[str], query: str, **extra: Any) -> list[dict[str, Any]]:
    body = {"user_id": "kb-reader-u1", "query": query, "knowledgebase_ids": kb_ids, **extra}
    hits: list[dict[str, Any]] = ok(api("/search/memory", body))["memory_detail_list"]
    return hits

"""Concurrent requests to one function of the stage: each gets its own answer, and (on the local stack,
whose log the test reads) each log line its own correlation id (the gateway runs them in separate
containers, as Lambda would)."""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from typing import Any

import httpx
import pytest

from tests.support.polling import wait_until
from tests.support.stack import RunningStack
from tests.support.stage import ApiTarget, Stage

pytestmark = pytest.mark.e2e

REQUESTS = 16


def _get(stack: ApiTarget, path: str, token: str) -> httpx.Response:
    with httpx.Client(base_url=stack.api_url, timeout=30) as http:
        return http.get(path, headers={"Authorization": f"Bearer {token}"})


def _log_lines(stack: RunningStack) -> list[dict[str, Any]]:
    lines = []
    for text in stack.function_log().splitlines():
        if text.startswith("{"):
            try:
                lines.append(json.loads(text))
            except ValueError:
                continue
    return lines


def test_concurrent_owners_and_strangers_each_get_their_own_answer(stage: Stage) -> None:
    suffix = uuid.uuid4().hex[:8]
    owner = stage.user(f"owner-{suffix}", name="Owner").token
    with httpx.Client(base_url=stage.api_url, timeout=30) as http:
        created = http.post(
            "/knowledge-bases",
            headers={"Authorization": f"Bearer {owner}"},
            json={"name": stage.kb_name(f"并发 {suffix}")},
        )
    assert created.status_code == HTTPStatus.CREATED, created.text
    kb_id = created.json()["id"]
    # Even requests are the owner's (200, the KB); odd ones a different stranger's each (404).
    callers = [owner if i % 2 == 0 else stage.user(f"stranger-{suffix}-{i}").token for i in range(REQUESTS)]

    with ThreadPoolExecutor(max_workers=REQUESTS) as executor:
        responses = list(executor.map(lambda token: _get(stage, f"/knowledge-bases/{kb_id}", token), callers))

    for i, resp in enumerate(responses):
        if i % 2 == 0:
            assert resp.status_code == HTTPStatus.OK, resp.text
            assert resp.json()["id"] == kb_id
            assert resp.json()["role"] == "owner"
        else:
            assert resp.status_code == HTTPStatus.NOT_FOUND, resp.text
            assert resp.json()["error"]["code"] == "kb_not_found"

    if stage.local is not None:
        refusals_are_logged_once_each(stage.local, responses)


def refusals_are_logged_once_each(local_stack: RunningStack, responses: list[httpx.Response]) -> None:
    """Each refusal is logged once, under the correlation id of the request it refused (the local stack's
    log of its functions)."""
    refused_ids = {resp.headers["apigw-requestid"] for i, resp in enumerate(responses) if i % 2}
    served_ids = {resp.headers["apigw-requestid"] for i, resp in enumerate(responses) if i % 2 == 0}

    def logged_refusals() -> list[dict[str, Any]] | None:
        refusals = [
            line
            for line in _log_lines(local_stack)
            if line.get("message") == "request refused"
            and line.get("correlation_id") in refused_ids | served_ids
        ]
        return refusals if len(refusals) >= len(refused_ids) else None

    refusals = wait_until(logged_refusals, timeout=5, message=f"{len(refused_ids)} refusals in the log")
    assert sorted(line["correlation_id"] for line in refusals) == sorted(refused_ids)
    for line in refusals:
        assert line["function_request_id"] == line["correlation_id"]
        assert line["function_name"].endswith("-manage-kb")
        assert line["error_code"] == "kb_not_found"

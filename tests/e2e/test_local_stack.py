"""Smoke test of `memmy-local up`: the gateway, its authorizer and the MemOS emulator answer over HTTP."""

from __future__ import annotations

import uuid
from http import HTTPStatus
from pathlib import Path

import httpx
import pytest

from memmy_local import tokens
from tests.support.stack import RunningStack, start_stack, stop_stack

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local_stack("memmy-local up itself: its emulator, its data dir, its login configuration"),
]


def test_local_stack_serves_the_api_and_the_emulator(local_stack: RunningStack) -> None:
    with httpx.Client(base_url=local_stack.api_url, timeout=10) as api:
        unknown = api.get("/no-such-route")
        anonymous = api.get("/knowledge-bases")
        user = f"smoke-{uuid.uuid4().hex[:8]}"
        authorized = api.get(
            "/knowledge-bases", headers={"Authorization": f"Bearer {local_stack.token(user)}"}
        )
    state = httpx.get(f"{local_stack.memos_url}/_emulator/state", timeout=10)

    assert unknown.status_code == HTTPStatus.NOT_FOUND
    assert unknown.json() == {"message": "Not Found"}
    assert anonymous.status_code == HTTPStatus.UNAUTHORIZED
    assert anonymous.json() == {"message": "Unauthorized"}
    assert authorized.status_code == HTTPStatus.OK, authorized.text
    assert authorized.json() == {"items": []}
    assert state.status_code == HTTPStatus.OK
    assert "knowledge_bases" in state.json()


def test_data_dir_keeps_knowledge_bases_across_restarts(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    process, stack = start_stack(tmp_path / "first", data_dir)
    try:
        headers = {"Authorization": f"Bearer {stack.token('keeper', name='Keeper')}"}
        created = httpx.post(
            f"{stack.api_url}/knowledge-bases", json={"name": "kept"}, headers=headers, timeout=10
        )
    finally:
        first_exit = stop_stack(process)
    assert created.status_code == HTTPStatus.CREATED, created.text
    assert first_exit == 0, stack.log()

    process, restarted = start_stack(tmp_path / "second", data_dir)
    # Its identity provider has another port, so another issuer: a token of the restarted stack.
    headers = {"Authorization": f"Bearer {restarted.token('keeper', name='Keeper')}"}
    try:
        listed = httpx.get(f"{restarted.api_url}/knowledge-bases", headers=headers, timeout=10)
        state = httpx.get(f"{restarted.memos_url}/_emulator/state", timeout=10).json()
    finally:
        stop_stack(process)

    assert listed.status_code == HTTPStatus.OK, listed.text
    assert [kb["id"] for kb in listed.json()["items"]] == [created.json()["id"]]
    assert len(state["knowledge_bases"]) == 1


def test_the_gateway_opens_only_the_login_configuration(local_stack: RunningStack) -> None:
    # template.yaml gives GET /login-configuration `Auth: {Authorizer: NONE}`: the local gateway serves it
    # without a token, with the stack's issuer and audience, and still refuses every other route.
    with httpx.Client(base_url=local_stack.api_url, timeout=10) as api:
        public = api.get("/login-configuration")
        with_token = api.get(
            "/login-configuration", headers={"Authorization": f"Bearer {local_stack.token('login-reader')}"}
        )
        bad_token = api.get("/login-configuration", headers={"Authorization": "Bearer not-a-jwt"})
        others = [api.get("/me"), api.get("/knowledge-bases"), api.post("/recall", json={"query": "x"})]

    assert public.status_code == HTTPStatus.OK, public.text
    assert public.json() == {
        "issuer": local_stack.issuer,
        "client_id": "memmy-desktop",
        "audience": tokens.DEFAULT_AUDIENCE,
        "scopes": ["openid", "profile", "email", "phone", "offline_access"],
        # The local provider's access tokens carry the audience and the profile claims.
        "bearer_token": "access_token",
    }
    assert public.headers["cache-control"] == "public, max-age=300"
    assert with_token.json() == public.json()
    # No authorizer runs on the route, as on API Gateway: a bad token is not looked at.
    assert bad_token.status_code == HTTPStatus.OK
    for refused in others:
        assert refused.status_code == HTTPStatus.UNAUTHORIZED, refused.request.url
        assert refused.json() == {"message": "Unauthorized"}

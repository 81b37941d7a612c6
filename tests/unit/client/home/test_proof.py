"""The desktop service's proof (``home/proof.py``) and its callers' refusals without a service: the
proof is bound to the token, its purpose, the nonce and the port; the hook and ``memmy-kb mcp`` send
neither the hook token nor the prompt to a listener that cannot give it. Strangers on a stopped
service's port, a relay and the commands: ``tests/integration/desktop/test_desktop_service_proof.py``."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest

from memmy_kb_client.agents.mcp_service import LocalService, ToolRefused
from memmy_kb_client.home import paths, proof
from memmy_kb_client.home.credentials import ServiceRecord
from tests.support.hook_service import HOOK_TOKEN, env_for, event_bytes, home, run_hook, service
from tests.support.mock_http import mock_connect

__all__ = ["home", "service"]  # the hook tests' fixtures: a fake service that proves itself, its home

NONCE = proof.new_nonce()


def test_the_proof_is_bound_to_the_token_its_purpose_the_nonce_and_the_port():
    base = proof.answer("mkc_a", "control", NONCE, 8765)
    assert len(base) == 64
    others = {
        proof.answer("mkc_b", "control", NONCE, 8765),
        proof.answer("mkc_a", "hook", NONCE, 8765),
        proof.answer("mkc_a", "control", proof.new_nonce(), 8765),
        proof.answer("mkc_a", "control", NONCE, 8766),
    }
    assert base not in others
    assert len(others) == 4
    assert proof.verified("mkc_a", "control", NONCE, 8765, base)
    for offered in (base.upper(), base[:-1], "", None, 7, "é" * 64):
        assert not proof.verified("mkc_a", "control", NONCE, 8765, offered)


def test_a_nonce_is_fresh_hex_and_a_challenge_takes_nothing_else():
    assert proof.new_nonce() != NONCE
    assert proof.valid_nonce(NONCE)
    for bad in ("", "ab" * 15, "A" * 64, "g" * 64, "0" * 129, "0" * 63 + "\n"):
        assert not proof.valid_nonce(bad)


def test_an_answer_proves_the_listener_only_as_a_200_json_object_carrying_the_proof():
    proven = json.dumps({"proof": proof.answer("mkh_a", "hook", NONCE, 8765)}).encode()
    proof.check_answer(200, proven, "mkh_a", "hook", NONCE, 8765, holder="hook token")
    refused = [(404, proven), (200, b"[]"), (200, b"not json"), (200, b"\xff"), (200, b'{"proof": 7}'), (200, b"{}")]
    for status, payload in refused:
        with pytest.raises(proof.NotProven, match=r"nothing was sent \(it did not prove it holds the hook token\)"):
            proof.check_answer(status, payload, "mkh_a", "hook", NONCE, 8765, holder="hook token")


def test_the_private_record_takes_only_a_token_and_a_port():
    good = ServiceRecord("mkc_x", 8765, 12, "http://127.0.0.1:8765")
    assert ServiceRecord.from_json(good.to_json()) == good
    for raw in ("", "[]", '{"port": 8765}', '{"token": "mkc x", "port": 8765}', '{"token": "mkc_x", "port": 0}'):
        assert ServiceRecord.from_json(raw) is None


def test_the_hook_sends_nothing_to_a_listener_that_proves_another_token(service, home):
    service.token = "mkh_not-the-one-in-the-file"
    code, out, _ = run_hook("codex", event_bytes("codex"), env_for(home))
    assert (code, out) == (0, b"")
    assert service.challenges == 1
    assert service.requests == []  # no POST: neither the token nor the prompt went out
    run = json.loads(Path(paths.hook_run_file(str(home / "desktop"), "codex")).read_text())
    assert run["outcome"] == "not_the_service"


def test_the_hook_proves_the_listener_on_the_connection_that_carries_the_prompt(service, home):
    assert run_hook("claude-code", event_bytes("claude-code"), env_for(home))[1]
    assert service.challenges == 1
    assert service.requests[0]["authorization"] == f"Bearer {HOOK_TOKEN}"


def test_the_mcp_server_sends_nothing_to_a_listener_that_cannot_prove_itself(tmp_path):
    state = tmp_path / "desktop"
    state.mkdir()
    (state / "hook-token").write_text("mkh_token")
    (state / "service.json").write_text(json.dumps({"port": 8765}))
    seen: list[httpx.Request] = []

    def stranger(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"proof": "0" * 64, "excerpts": [], "knowledge_bases": []})

    service = LocalService({"MEMMY_KB_HOME": str(tmp_path)}, connect=mock_connect(stranger))
    with pytest.raises(ToolRefused, match=r"the program listening on 127\.0\.0\.1:8765 is not this desktop service"):
        anyio.run(service.search, "secret question", None, None)
    (challenge,) = seen
    assert challenge.url.path == proof.PATH
    assert "Authorization" not in challenge.headers
    assert b"secret question" not in challenge.content

"""``memmy-local token USER --mcp``: an MCP access token (contract section 1) for the running stack's
``/mcp`` (from the stack's record in the dev home), signed with the key it checks; and the option
combinations it refuses with a sentence and exit status 2."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from memmy_kb.domain.remote_mcp import tokens as remote_tokens
from memmy_local import cli as local_cli
from memmy_local import tokens
from memmy_local.control import state_file


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(tokens.HOME_ENV, str(tmp_path))
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = local_cli.main(["token", *args])
    out, err = capsys.readouterr()
    return code, out.strip(), err.strip()


def claims_of(token: str, home: Path, issuer: str, audience: str) -> dict[str, object]:
    key = tokens.load_signing_key(tokens.signing_key_path(home))
    return tokens.verify_token(token, key=key, issuer=issuer, audience=audience)


def test_an_mcp_token_is_for_the_running_stacks_mcp_endpoint(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    issuer = "http://127.0.0.1:18070"
    state_file(home).write_text(json.dumps({"issuer": issuer, "api_url": "http://127.0.0.1:18080"}))

    code, token, _ = run(capsys, "alice", "--mcp", "--client-name", "Claude Code")

    assert code == 0
    claims = claims_of(token, home, issuer, "http://127.0.0.1:18080/mcp")
    assert claims["aud"] == "http://127.0.0.1:18080/mcp"
    assert (claims["sub"], claims["scope"], claims["client_id"]) == ("alice", "kb.search", "memmy-local-cli")
    assert claims["client_name"] == "Claude Code"
    assert claims["exp"] - claims["iat"] == 3600
    assert abs(claims["auth_time"] - time.time()) < 60
    assert claims["jti"]
    assert "email" not in claims


def test_without_a_running_stack_it_is_for_the_default_ports(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, token, _ = run(capsys, "alice", "--mcp", "--ttl", "600")

    assert code == 0
    claims = claims_of(token, home, tokens.DEFAULT_ISSUER, "http://127.0.0.1:8080/mcp")
    assert claims["exp"] - claims["iat"] == 600
    assert "client_name" not in claims


def test_a_desktop_token_is_as_before(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, token, _ = run(capsys, "alice", "--email", "alice@example.com")

    claims = claims_of(token, home, tokens.DEFAULT_ISSUER, tokens.DEFAULT_AUDIENCE)
    assert code == 0
    assert claims["exp"] - claims["iat"] == tokens.DEFAULT_TTL_SECONDS
    assert "scope" not in claims


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--mcp", "--ttl", "7200"], "--ttl with --mcp must be between 1 and 3600 seconds."),
        (["--mcp", "--ttl", "0"], "--ttl with --mcp must be between 1 and 3600 seconds."),
        (["--mcp", "--email", "a@example.com"], "--name, --email and --phone do not apply to --mcp"),
        (["--mcp", "--client-name", "x" * 101], "--client-name must have between 1 and 100 characters."),
        (["--client-name", "Agent"], "--client-name applies only with --mcp."),
    ],
)
def test_options_that_do_not_go_together_are_refused_with_a_sentence(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    code, out, err = run(capsys, "alice", *args)

    assert code == 2
    assert out == ""
    assert says in err


def test_the_claims_cap_an_mcp_tokens_life_at_an_hour() -> None:
    with pytest.raises(ValueError, match="between 1 and 3600"):
        remote_tokens.mcp_access_claims(
            "a", issuer="i", resource="r", client_id="c", auth_time=0, now=0, ttl_seconds=3601
        )


def test_the_commands_bounds_are_the_services() -> None:
    # `memmy-local token` checks its options without loading the core: its copies must not drift.
    assert (tokens.MCP_SCOPE, tokens.MCP_TTL_SECONDS, tokens.MAX_CLIENT_NAME) == (
        remote_tokens.MCP_SCOPE, remote_tokens.MAX_LIFETIME_SECONDS, remote_tokens.MAX_CLIENT_NAME)  # fmt: skip

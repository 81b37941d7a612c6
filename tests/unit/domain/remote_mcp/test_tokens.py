"""The MCP access token's claims (``memmy_kb.domain.remote_mcp.tokens``): issuer, audience (a string or a
list), life, user and client, then the scope; the time is passed in."""

from __future__ import annotations

from typing import Any

import pytest

from memmy_kb.domain.remote_mcp.tokens import TokenRefused, TokenRules, accept_claims

RULES = TokenRules(issuer="http://127.0.0.1:8070", audience="http://127.0.0.1:8080/mcp", scope="kb.search")
NOW = 1_800_000_000


def claims(**changed: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "iss": RULES.issuer,
        "sub": "alice",
        "aud": RULES.audience,
        "scope": "openid kb.search",
        "client_id": "client-1",
        "client_name": "Claude",
        "auth_time": NOW - 7200,
        "iat": NOW - 60,
        "exp": NOW + 3540,
        "jti": "j1",
    }
    base.update(changed)
    return {k: v for k, v in base.items() if v is not None}


def refused(**changed: Any) -> TokenRefused:
    with pytest.raises(TokenRefused) as raised:
        accept_claims(claims(**changed), RULES, NOW)
    return raised.value


def test_a_token_with_every_claim_right_names_the_user_the_client_and_the_grants_sign_in() -> None:
    caller = accept_claims(claims(), RULES, NOW)

    assert (caller.user_id, caller.client_id, caller.client_name) == ("alice", "client-1", "Claude")
    assert caller.scope == ("openid", "kb.search")
    assert caller.auth_time == NOW - 7200


def test_an_audience_list_holding_the_resource_is_accepted_and_one_without_it_refused() -> None:
    assert accept_claims(claims(aud=["other", RULES.audience]), RULES, NOW).user_id == "alice"
    assert "another resource" in refused(aud=["memmy-kb"]).reason


@pytest.mark.parametrize(
    "changed",
    [
        {"iss": "https://evil.example"},
        {"aud": "memmy-kb"},  # a desktop token
        {"aud": RULES.audience + "/"},  # exactly, not a prefix
        {"aud": None},
        {"exp": NOW - 61},
        {"iat": NOW + 120, "exp": NOW + 3000},
        {"nbf": NOW + 120},
        {"iat": NOW - 10, "exp": NOW + 7200},  # lives two hours
        {"sub": None},
        {"sub": "  "},
        {"client_id": None},
        {"auth_time": None},  # a refresh's iat cannot stand in for the sign-in
        {"exp": "soon"},
    ],
)
def test_a_token_wrong_in_any_claim_is_refused_as_invalid_not_as_short_of_scope(changed: dict[str, Any]) -> None:
    assert refused(**changed).insufficient_scope is False


def test_an_expired_token_is_accepted_within_the_minutes_leeway_only() -> None:
    assert accept_claims(claims(exp=NOW - 59), RULES, NOW).user_id == "alice"
    assert refused(exp=NOW - 60).reason == "The token has expired."


@pytest.mark.parametrize("scope", ["openid", "kb.searchx", "", None])
def test_a_valid_token_without_the_scope_is_refused_for_its_scope(scope: str | None) -> None:
    error = refused(scope=scope)
    assert error.insufficient_scope is True
    assert error.reason == "The token lacks the scope kb.search."


def test_a_client_without_a_name_is_shown_by_its_id_and_a_long_name_is_cut() -> None:
    assert accept_claims(claims(client_name=None), RULES, NOW).client_name == "client-1"
    assert len(accept_claims(claims(client_name="x" * 300), RULES, NOW).client_name) == 100
